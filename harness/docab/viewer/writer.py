"""Write ``RUN_DIR/viewer/``: read the run's files, build the page with ``docab.viewer.page``.

The only module of the viewer that touches the filesystem. The folder is built beside the old one
and swapped in whole, so a viewer is never half old, half new. Transcripts are read one at a time
and written as they are read, so memory stays flat on runs of thousands of samples.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docab.log.records import RunRecord
from docab.log.store import inside_run
from docab.report.schema import Summary, SummaryFormatError, parse_summary
from docab.viewer.html import render_index, transcript_script
from docab.viewer.page import (
    TranscriptEntry,
    build_index,
    plot_order,
    view_transcript,
)

VIEWER_DIR = "viewer"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""A transcript larger than this is not copied into the viewer (the page would not stay usable)."""

Progress = Callable[[int, int], None]  # (transcripts done, total)


class ViewerError(Exception):
    """The viewer cannot be written; the message says why and what to do."""


@dataclass
class ViewerResult:
    path: Path  # the index.html written
    questions: int
    records: int
    transcripts: int  # transcripts written into the viewer
    problems: list[str] = field(default_factory=list)  # transcripts not shown, or shown in part, and why
    plots_drawn: list[Path] = field(default_factory=list)
    summary_source: str = ""


def read_transcript(path: Path, *, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> tuple[object, str | None]:
    """A transcript's JSON, or None and the reason it cannot be shown (missing, too large, not JSON)."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return (
                None,
                f"transcript too large to show ({size / 1e6:.1f} MB; the viewer's limit is {max_bytes / 1e6:.0f} MB)",
            )
        return json.loads(path.read_bytes()), None
    except FileNotFoundError:
        return None, "transcript missing"
    except OSError as exc:
        return None, f"transcript unreadable: {exc.strerror or exc}"
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, "transcript unreadable: not valid JSON (the file may be damaged)"


def _stale(path: Path, source: Path) -> bool:
    return not path.exists() or path.stat().st_mtime < source.stat().st_mtime


def _load_summary(run_dir: Path, records_path: Path) -> tuple[Summary | None, str]:
    """summary.json when present, not older than the records, of this schema version and written
    for this folder alone; else None and why."""
    path = run_dir / "summary.json"
    if not path.exists():
        return None, "summary.json is missing"
    if _stale(path, records_path):
        return None, "summary.json is older than records.jsonl"
    try:
        summary = parse_summary(path.read_bytes())
    except OSError:
        return None, "summary.json is unreadable"
    except SummaryFormatError as exc:
        return None, f"summary.json {exc}"
    if not _written_for(summary, run_dir):
        # `docab report shard1 shard2` writes the merged summary (and plots) into shard1.
        return None, "summary.json was written for other folders (a merged report)"
    return summary, ""


def _written_for(summary: Summary, run_dir: Path) -> bool:
    """False when the summary was computed from other folders than just this one."""
    try:
        return [Path(run).resolve() for run in summary.runs] == [run_dir.resolve()]
    except (OSError, ValueError):
        return False


def write_viewer(
    run_dir: Path,
    *,
    draw_plots: bool = True,
    progress: Progress | None = None,
    max_transcript_bytes: int = MAX_TRANSCRIPT_BYTES,
) -> ViewerResult:
    """Write ``run_dir/viewer/index.html`` and ``viewer/transcripts/<n>.js``; returns what was written.

    The summary comes from ``summary.json`` when it is at least as new as ``records.jsonl`` and reads
    as a summary of this schema version (``docab.report.schema.parse_summary``), else it is computed with ``docab.report.summary`` and not written back. With
    ``draw_plots``, plots missing or older than the records are drawn into ``run_dir/plots/``.
    Raises ``docab.report.summary.ReportError`` for a folder without records, :class:`ViewerError` when
    the viewer cannot be written.
    """
    from docab.report.summary import build_report, load_run

    run = load_run(run_dir)  # raises ReportError with a message fit to show
    records_path = run_dir / "records.jsonl"
    summary, why = _load_summary(run_dir, records_path)
    plots_dir = run_dir / "plots"
    existing_plots = sorted(p.name for p in plots_dir.glob("*.png")) if plots_dir.is_dir() else []
    foreign = why.startswith("summary.json was written for other folders")  # so were its plots
    need_plots = draw_plots and (
        foreign
        or not existing_plots
        or any(_stale(plots_dir / name, records_path) for name in existing_plots)
    )
    report = build_report(run) if summary is None or need_plots else None
    drawn: list[Path] = []
    if need_plots and report is not None:
        from docab.report.plots import write_plots

        try:
            drawn = write_plots(report, plots_dir)
        except OSError as exc:
            raise ViewerError(f"could not draw the plots into {plots_dir}: {exc.strerror or exc}") from None
        existing_plots = sorted(p.name for p in plots_dir.glob("*.png"))
    if summary is None:
        assert report is not None
        summary = report.summary
        source, note = "computed", f"Computed by docab view ({why}); run docab report to write it."
    else:
        source, note = "summary.json", ""

    images_dir = run_dir / "images"
    images = {f"images/{p.name}" for p in images_dir.iterdir()} if images_dir.is_dir() else set()
    staging = run_dir / f".{VIEWER_DIR}-{os.getpid()}.tmp"
    target = run_dir / VIEWER_DIR
    try:
        if staging.exists():
            shutil.rmtree(staging)
        (staging / "transcripts").mkdir(parents=True)
        entries, problems = _write_transcripts(
            run_dir, run.records, staging / "transcripts", images, progress, max_transcript_bytes
        )
        index = build_index(
            run.records,
            manifest=run.manifest,
            summary=summary,
            summary_source=source,
            summary_note=note,
            transcripts=entries,
            plots=plot_order(existing_plots),
            warnings=run.warnings,
        )
        (staging / "index.html").write_text(render_index(index), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ViewerError(f"could not write the viewer into {run_dir}: {exc.strerror or exc}") from None
    return ViewerResult(
        path=target / "index.html",
        questions=len(index["questions"]),
        records=len(run.records),
        transcripts=sum(1 for e in entries.values() if e.number is not None),
        problems=problems,
        plots_drawn=drawn,
        summary_source=source,
    )


def _write_transcripts(
    run_dir: Path,
    records: Sequence[RunRecord],
    folder: Path,
    images: set[str],
    progress: Progress | None,
    max_bytes: int,
) -> tuple[dict[tuple[str, str, int], TranscriptEntry], list[str]]:
    entries: dict[tuple[str, str, int], TranscriptEntry] = {}
    problems: list[str] = []
    total = len(records)
    for done, record in enumerate(records, start=1):
        label = f"{record.arm} {record.qid} epoch {record.epoch}"
        if not record.transcript:
            entries[record.key] = TranscriptEntry(problem="no transcript was recorded for this sample")
        elif (path := inside_run(run_dir, record.transcript)) is None:
            entries[record.key] = TranscriptEntry(problem="transcript path outside the run folder; not read")
            problems.append(f"{label}: transcript path {record.transcript!r} is outside the run folder")
        else:
            document, problem = read_transcript(path, max_bytes=max_bytes)
            view = view_transcript(document, images) if problem is None else None
            problem = problem or (view.problem if view else None)
            if problem or view is None:
                entries[record.key] = TranscriptEntry(problem=problem)
                problems.append(f"{label}: {problem} ({record.transcript})")
            else:
                # Shown, and flagged: an older format or a damaged part is named on the page and here.
                problems += [f"{label}: {notice} ({record.transcript})" for notice in view.notices]
                number = len(entries)
                (folder / f"{number}.js").write_text(transcript_script(number, view.data), encoding="utf-8")
                entries[record.key] = TranscriptEntry(number=number, question=view.question)
        if progress:
            progress(done, total)
    return entries, problems
