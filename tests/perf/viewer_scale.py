"""Does ``docab view`` stay usable on a large run? Writing time, file sizes, and the page in Chromium.

    uv run python -m tests.perf.viewer_scale                     # 1,500 questions x 2 arms, 8 turns each
    uv run python -m tests.perf.viewer_scale --questions 200 --keep /tmp/viewer-run

Builds a synthetic run (records, one transcript per record with ``--turns`` model turns and tool
results of about ``--result-chars`` characters each, summary.json written beforehand so the figure
is the viewer's own cost), times ``write_viewer``, and, when Chromium is installed, measures in the
page: time to the drawn question table, one filter change, and opening a question (both arms'
transcripts loaded and drawn). Prints one table; the machine's load is printed with it.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

from docab.log.events import (
    AnswerEvent,
    Event,
    MessageEvent,
    ModelTurnEvent,
    RequestedCall,
    TextBlock,
    ToolResultEvent,
    Transcript,
)
from docab.log.transcript import transcript_path
from docab.report.summary import build_report, load_run
from docab.usage import Usage
from docab.viewer.writer import write_viewer
from tests.harness.synthetic_runs import make_record, write_run
from tests.support.chromium import Chromium, find_chromium


def build(folder: Path, *, questions: int, turns: int, result_chars: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    words = [
        "revenue",
        "table",
        "page",
        "chart",
        "figure",
        "north",
        "region",
        "survey",
        "species",
        "answer",
        "document",
    ]
    records = []
    for q in range(questions):
        doc = f"doc{q // 10:03d}.pdf"
        for arm in ("fs", "fs+md-vision"):
            correct = rng.random() < (0.4 if arm == "fs" else 0.55)
            record = make_record(
                arm,
                f"q{q:05d}",
                doc,
                score=1.0 if correct else 0.0,
                status="error" if rng.random() < 0.02 else "ok",
                evidence_sources=(rng.choice(["Table", "Chart", "Pure-text (Plain-text)", "Figure"]),),
                doc_type=["Academic paper", "Guidebook", "Brochure"][q % 3],
                answer_format=["Int", "Str", "Float", "List"][q % 4],
                wall_time_s=rng.uniform(5, 60),
                run_id=folder.name,
            )
            rel = transcript_path(arm, record.qid, 0)
            events: list[Event] = [
                MessageEvent(role="user", content=[TextBlock(text=f"Question: what about {q}?")])
            ]
            for t in range(1, turns + 1):
                events.append(
                    ModelTurnEvent(
                        turn=t,
                        text="",
                        tool_calls=[
                            RequestedCall(
                                id=f"c{t}",
                                name="read_file",
                                arguments={"path": "document/document.md", "offset": t * 40},
                            )
                        ],
                        usage=Usage(role="agent", input_uncached=1000 * t, output=50),
                        latency_s=1.2,
                        retries=0,
                        stop_reason="tool_calls",
                        raw=None,
                    )
                )
                body = " ".join(rng.choice(words) for _ in range(result_chars // 7))
                events.append(
                    ToolResultEvent(
                        tool_call_id=f"c{t}",
                        name="read_file",
                        duration_s=0.01,
                        is_error=False,
                        truncated=False,
                        content=[TextBlock(text=body)],
                        meta={},
                    )
                )
            events.append(
                AnswerEvent(
                    protocol="submit_tool",
                    status=record.status,
                    raw_answer=record.raw_answer,
                    extracted_answer=record.extracted_answer,
                    gold=record.gold,
                    answer_format=record.answer_format,
                    score=record.score,
                    errors=[],
                    extraction_usage=[],
                )
            )
            transcript = Transcript(
                run_id=folder.name,
                arm=arm,
                qid=record.qid,
                epoch=0,
                model=record.model,
                system="",
                tools=[],
                events=events,
            )
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(transcript.model_dump_json())
            records.append(record.__class__(**{**record.__dict__, "transcript": rel}))
    return write_run(folder, records)


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def browser_figures(index: Path) -> dict[str, float]:
    binary = find_chromium()
    if binary is None:
        return {}
    with Chromium.launch(binary) as browser:
        page = browser.new_page()
        page.navigate(index.as_uri(), timeout=120)
        page.wait_until(
            "document.querySelectorAll('#questions tbody tr[data-index]').length > 0", timeout=120
        )
        # Forcing a layout makes the figure include it, not only the script building the table.
        drawn_ms = page.evaluate(
            "(() => { document.body.getBoundingClientRect(); return performance.now(); })()"
        )
        filter_ms = page.evaluate(
            "(() => { const s = document.getElementById('filter-outcome'); const t = performance.now();"
            " s.value = 'wrong'; s.dispatchEvent(new Event('change')); return performance.now() - t; })()"
        )
        began = time.perf_counter()
        page.evaluate("document.querySelector('#questions tbody tr[data-index]:not([hidden])').click()")
        page.wait_until("document.querySelectorAll('#arms .events').length === 2", timeout=60, interval=0.005)
        open_ms = (time.perf_counter() - began) * 1000
        errors = page.errors()
    if errors:
        raise SystemExit(f"the page reported errors: {errors}")
    return {
        "page drawn (ms from navigation)": drawn_ms,
        "filter change (ms)": filter_ms,
        "open a question (ms)": open_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=1500)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--result-chars", type=int, default=3000)
    parser.add_argument("--keep", type=Path, help="build the run here and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="docab-viewer-scale-")) / "run"
    build(folder, questions=args.questions, turns=args.turns, result_chars=args.result_chars)
    summary = build_report(load_run(folder)).summary
    (folder / "summary.json").write_text(summary.model_dump_json())
    began = time.perf_counter()
    result = write_viewer(folder, draw_plots=False)
    seconds = time.perf_counter() - began
    rows: dict[str, float] = {
        "records": result.records,
        "transcripts (MB, in the run)": size_mb(folder / "transcripts"),
        "write_viewer (s)": seconds,
        "index.html (MB)": size_mb(result.path),
        "viewer/transcripts (MB)": size_mb(folder / "viewer" / "transcripts"),
    }
    rows.update(browser_figures(result.path))
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}"
    )
    for name, value in rows.items():
        print(f"{name:34s} {value:10.2f}" if isinstance(value, float) else f"{name:34s} {value:10d}")
    if args.keep is None:
        import shutil

        shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
