"""Write ``RUN_DIR/viewer/``: read the run's files, build the page with ``docab.viewer.page``.

The only module of the viewer that touches the filesystem. The folder is built beside the old one
and swapped in whole, so a viewer is never half old, half new. Transcripts are read one at a time
and written as they are read, so memory stays flat on runs of thousands of samples.

A viewer written with ``out`` travels alone: the plots and the stored images it shows are copied
into it and linked from there, so the folder can be zipped, mailed or served anywhere. Since the
swap replaces the folder whole, ``out`` must be new, empty or a viewer this module wrote (it holds
:data:`MARK`); any other folder is refused rather than deleted.
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
    IMAGE_PATH,
    VIEWER_TO_RUN,
    TranscriptEntry,
    build_index,
    plot_order,
    view_transcript,
)

VIEWER_DIR = "viewer"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""A transcript larger than this is not copied into the viewer (the page would not stay usable)."""

MARK = ".docab-viewer"
"""The file naming a standalone viewer folder as one ``docab view --out`` wrote (and may replace)."""

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
    standalone: bool = False  # written with ``out``: plots and images copied inside
    bytes_written: int = 0  # the viewer folder's size on disk


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
    out: Path | None = None,
    draw_plots: bool = True,
    progress: Progress | None = None,
    max_transcript_bytes: int = MAX_TRANSCRIPT_BYTES,
) -> ViewerResult:
    """Write ``run_dir/viewer/index.html`` and ``viewer/transcripts/<n>.js``; returns what was written.

    With ``out``, the viewer goes to ``out/`` instead, with copies of the plots (``out/plots/``) and
    stored images (``out/images/``) it shows, and links only inside itself.

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
    if out is None:
        target, base = run_dir / VIEWER_DIR, VIEWER_TO_RUN
    else:
        target, base = _standalone_target(out, run_dir), "."
    staging = target.parent / f".{target.name}-{os.getpid()}.tmp"
    try:
        if staging.exists():
            shutil.rmtree(staging)
        (staging / "transcripts").mkdir(parents=True)
        if out is not None:  # copies first, so the page links only what it carries
            existing_plots = _copy_files(plots_dir, staging / "plots", existing_plots)
            stored = sorted(path.removeprefix("images/") for path in images if IMAGE_PATH.fullmatch(path))
            images = {f"images/{name}" for name in _copy_files(images_dir, staging / "images", stored)}
            (staging / MARK).write_text(f"a standalone viewer of {run_dir.resolve()}\n", encoding="utf-8")
        entries, problems = _write_transcripts(
            run_dir, run.records, staging / "transcripts", images, progress, max_transcript_bytes, base
        )
        index = build_index(
            run.records,
            manifest=run.manifest,
            summary=summary,
            summary_source=source,
            summary_note=note,
            transcripts=entries,
            plots=plot_order(existing_plots, base=base),
            warnings=run.warnings,
        )
        (staging / "index.html").write_text(render_index(index), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ViewerError(f"could not write the viewer into {target.parent}: {exc.strerror or exc}") from None
    return ViewerResult(
        path=target / "index.html",
        standalone=out is not None,
        bytes_written=sum(p.stat().st_size for p in target.rglob("*") if p.is_file()),
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
    base: str,
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
            view = view_transcript(document, images, base=base) if problem is None else None
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


def _standalone_target(out: Path, run_dir: Path) -> Path:
    """``out`` when the viewer may be written there (and replace what is there), else ViewerError."""
    try:
        resolved, run = out.resolve(), run_dir.resolve()
    except (OSError, RuntimeError) as exc:
        raise ViewerError(f"cannot use {out} for the viewer: {exc}") from None
    if run == resolved or run.is_relative_to(resolved):
        raise ViewerError(
            f"--out {out} holds the run folder itself; name a new folder, e.g. {out / 'viewer-standalone'}"
        )
    if resolved.is_relative_to(run) and resolved.relative_to(run).parts[0] in {
        "images",
        "plots",
        "transcripts",
    }:
        raise ViewerError(f"--out {out} is inside the run's own files; name a folder outside them")
    if resolved.exists():
        if not resolved.is_dir():
            raise ViewerError(
                f"--out {out} is a file; name a folder (new, empty, or an earlier docab view --out)"
            )
        if any(resolved.iterdir()) and not (resolved / MARK).is_file():
            raise ViewerError(
                f"--out {out} is a folder that docab view did not write and it is not empty; "
                "name a new or empty folder (it is replaced whole on every write)"
            )
    elif not resolved.parent.is_dir():
        raise ViewerError(f"--out {out}: its parent folder {resolved.parent} does not exist")
    return resolved


def _copy_files(source: Path, folder: Path, names: Sequence[str]) -> list[str]:
    """Copy the regular files ``source/<name>`` into ``folder``; returns the names copied.

    A symlink or special file is skipped, so a standalone viewer carries only the run's own files.
    """
    copied: list[str] = []
    folder.mkdir(exist_ok=True)
    for name in names:
        path = source / name
        if path.is_symlink() or not path.is_file():
            continue
        shutil.copyfile(path, folder / name, follow_symlinks=False)
        copied.append(name)
    return copied
