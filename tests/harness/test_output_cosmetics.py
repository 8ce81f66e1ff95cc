"""What a user reads: tables that do not wrap in a pipe, times that never show as 0.0 s, a compare
that explains a token change rightly, and ``docab convert`` progress in CI logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.cli.mmlongbench import ProgressLines
from docab.report.render import seconds, signed_seconds
from tests.harness.synthetic_runs import random_run


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (12.34, "12.3 s"),
        (1.0, "1.0 s"),
        (0.96, "960 ms"),  # not "1.0 s" beside "3 ms" and "x320"
        (0.043, "43 ms"),
        (0.0004, "under 1 ms"),
        (0.0, "0.0 s"),
        (None, "–"),
    ],
)
def test_short_times_keep_their_precision(value: float | None, shown: str) -> None:
    assert seconds(value) == shown


def test_signed_times_too() -> None:
    assert (signed_seconds(0.043), signed_seconds(-0.043), signed_seconds(1.25)) == (
        "+43 ms",
        "-43 ms",
        "+1.2 s",
    )


def test_tables_do_not_wrap_when_piped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    run = random_run(tmp_path / "run", documents=6, per_document=4)
    assert main(["report", str(run), "--no-write"]) == 0
    out = capsys.readouterr().out  # captured: not a terminal, as in `docab report ... | less`
    lines = out.splitlines()
    header = next(line for line in lines if "evidence recall" in line)  # each header whole, on one line
    assert "ok / error / timeout / limit" in header and "Acc [95 % CI]" in header
    assert max(len(line) for line in lines) > 80  # rich's default of 80 would have wrapped
    assert all(len(line) < 1000 for line in lines)  # and nothing is padded to the console's width
    # Issue 27: a pipe gets a normal terminal's width: notes wrap at it, only tables may be wider.
    prose = [line.rstrip() for line in lines if line.strip() and line.lstrip()[0] not in "┏┃┡│└╭╰┗━─"]
    assert any("Intervals are 95 %" in line for line in prose)
    assert max(len(line) for line in prose) <= 120


def compare_text(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["compare", *args]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_compare_explains_a_token_change_by_what_was_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = random_run(tmp_path / "base", documents=6, per_document=4)
    new = random_run(tmp_path / "new", documents=6, per_document=4, seed=1)
    arms = compare_text([str(base)], capsys)  # an A/B of arms: extra tools cost tokens per turn
    assert "the fixed per-turn cost of the extra tool definitions" in arms
    runs = compare_text([str(base), str(new)], capsys)  # one arm in two runs: no extra tools
    assert "extra tool definitions" not in runs
    assert "the same arm in both runs: a change here means its system prompt, tool definitions" in runs


@dataclass
class Event:
    pages_done: int
    pages_total: int
    document: str


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_convert_progress_lines_for_logs(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    clock = Clock()
    lines = ProgressLines(sys.stderr, every_s=10, clock=clock)
    for done in range(1, 7):
        clock.now = done * 3.0
        lines(Event(done, 6, "a.pdf"))
    err = capsys.readouterr().err.splitlines()
    # the first event, one 10 s later, and the last page
    assert err == [
        "converting: 1/6 pages (a.pdf)",
        "converting: 5/6 pages (a.pdf)",
        "converting: 6/6 pages (a.pdf)",
    ]


def test_docab_convert_prints_progress_when_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for page in range(2):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.cell(text=f"Page {page + 1}")
    pdf.output(str(tmp_path / "doc.pdf"))
    assert main(["convert", str(tmp_path / "doc.pdf"), "--out", str(tmp_path / "corpus"), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "converting: 2/2 pages" in err
