"""``docab view RUN_DIR``: write the run's static HTML viewer (``docab.viewer``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from docab.cli.errors import CommandError

HELP = """\
Write a static HTML viewer of a run into RUN_DIR/viewer/index.html. Open it from disk in any
browser: no server, no network.

It shows the run (dataset, models, arms, git commit), the report's tables (from summary.json, or
computed when that is missing or older than the records), the plots, and a table of every question
with each arm's outcome, tokens and time, filterable by arm, outcome (correct, partial, wrong,
error, timeout, limit hit, arms scoring differently, one arm better or worse), evidence source,
evidence pages, document type and answer format, with a text search. Opening a question shows the
arms side by side: messages, model turns (text, tool calls with their arguments, tokens and
latency per turn), tool results (duration, errors, truncation, text and images), model errors, and
the answer and its scoring. Several epochs get an epoch selector.

Plots missing from RUN_DIR/plots/ (or older than the records) are drawn first, as
`docab report` does. Transcripts are copied into viewer/transcripts/ (one small script
per sample, loaded when its question is opened); a missing or damaged transcript is shown as such
and does not stop the viewer. Re-running replaces viewer/ whole.

With --out DIR the viewer is written to DIR instead and travels alone: the plots and the run's
stored images are copied into it (DIR/plots/, DIR/images/) and the page links nothing outside DIR,
so the folder can be zipped, attached to a CI job or served as it is. DIR must be new, empty, or an
earlier --out viewer (it is replaced whole); any other folder is refused, never deleted.

examples:
  docab view results/demo
  docab view results/mmlb-openai --no-plots
  docab view results/demo --out /tmp/demo-viewer && (cd /tmp && zip -qr demo-viewer.zip demo-viewer)
"""


def register(subparsers: Any) -> None:

    parser = subparsers.add_parser(
        "view",
        help="write a static HTML viewer of a run (summary, plots, questions, transcripts side by side)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a results/<run-id>/ folder")
    parser.add_argument(
        "--no-plots",
        action="store_true",
        help="do not draw missing plots (the viewer shows the ones present)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write a viewer that travels alone into DIR (plots and images copied inside) "
        "instead of RUN_DIR/viewer/",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from docab.report.summary import ReportError
    from docab.viewer.writer import ViewerError, write_viewer

    with _progress(quiet=args.quiet) as progress:
        try:
            result = write_viewer(
                args.run_dir,
                out=args.out,
                draw_plots=not args.no_plots,
                progress=progress,
            )
        except (ReportError, ViewerError) as exc:
            raise CommandError(str(exc)) from None
    for problem in result.problems[:20]:
        print(f"docab view: warning: {problem}", file=sys.stderr)
    if len(result.problems) > 20:
        print(f"docab view: warning: ... and {len(result.problems) - 20} more", file=sys.stderr)
    if result.plots_drawn:
        print(f"drew {len(result.plots_drawn)} plot(s) into {result.plots_drawn[0].parent}", file=sys.stderr)
    shown = f"{result.transcripts} of {result.records} transcripts"
    alone = f"; travels alone, {result.bytes_written / 1e6:.1f} MB" if result.standalone else ""
    print(
        f"wrote {result.path} ({result.questions} questions, {shown}; summary from {result.summary_source}{alone})"
    )
    print(f"open: {result.path.resolve().as_uri()}")
    return 0


class _progress:
    """A transient progress bar on a terminal for long runs; nothing otherwise."""

    def __init__(self, *, quiet: bool) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return None
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.start()
        self.task = self.bar.add_task("transcripts", total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
