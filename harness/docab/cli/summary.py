"""How ``docab run`` and ``docab demo`` launch a run and what they print at the end.

The same as ``docab report RUN_DIR`` (per-arm accuracy and F1 with intervals, tokens, latency,
tool calls, paired differences), written into the run folder as ``report.md`` and
``summary.json`` too.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from docab.runner.launch import RunRequest


def print_summary(run_dir: Path) -> None:
    from docab.cli.report import write_report_files
    from docab.report.render import print_console
    from docab.report.summary import ReportError, build_report, load_run

    try:
        report = build_report(load_run(run_dir))
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    print_console(report.summary)
    # No plots here: drawing them costs seconds at the end of every run; `docab report` draws them.
    write_report_files(report, run_dir, plots=False)


SPEND_CAP_EXIT = 3


def resume_command(argv: Sequence[str] | None = None) -> str:
    """The command that resumes this run: the same words again (``argv`` default ``sys.argv``)."""
    words = list(sys.argv if argv is None else argv)
    return shlex.join(["docab", *words[1:]])


def launch_and_report(
    request: RunRequest,
    *,
    max_error_share: float = 0.0,
    command: str = "docab run",
    resume: Callable[[float], str] | None = None,
    argv: Sequence[str] | None = None,
) -> int:
    """Run ``request``, then print and write its report. Returns the exit status: 3 when the
    spend cap stopped the run (saying what it spent and, through ``resume``, the command that
    resumes it under a cap high enough) or when the circuit breaker stopped it (the endpoint is
    gone: the message and the command that resumes it on stderr); 1 when more than
    ``max_error_share`` of the samples ended in an error or timeout (with a one-line account of
    the causes on stderr); else 0."""
    from docab.runner.breaker import RunStopped
    from docab.runner.launch import launch

    try:
        outcome = launch(request)
    except RunStopped as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        print(f"resume with: {resume_command(argv)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished samples are saved; re-run the same command to resume", file=sys.stderr)
        raise
    print_summary(outcome.run_dir)
    print(
        f"run: {outcome.run_dir} (records.jsonl, transcripts/, report.md); "
        f"plots: docab report {outcome.run_dir}; transcripts: docab view {outcome.run_dir}"
    )
    if request.limit is not None or request.first is not None:
        print(
            f"a pilot? project the full run's cost, time and detectable effect: docab plan {outcome.run_dir}"
        )
    if outcome.unrecorded_usd >= 0.00005:
        print(
            f"billed and not in the records: ${outcome.unrecorded_usd:.4f}, for samples cut short (a kill, "
            "a Ctrl-C, a stopped run) that a resume runs again; every billed call is in spend.jsonl, "
            "and --max-cost counts it"
        )
    stop = outcome.spend_stop
    if stop is not None:
        again = f"; to go on, raise the cap: {resume(stop.needed())}" if resume and not stop.unknown else ""
        print(f"{command}: {stop.message()}{again}", file=sys.stderr)
        return SPEND_CAP_EXIT
    errors = outcome.errors()
    if errors.exceeds(max_error_share):
        print(
            f"{command}: {errors.summary(max_error_share)}; fix the cause, then rerun them with "
            "the same command and --retry-errors",
            file=sys.stderr,
        )
        return 1
    return 0
