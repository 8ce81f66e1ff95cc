"""The offline policy is fair between arms (issue 13, findings 1 and 2).

Every question of the built-in suite, and generated documents built to trip a policy up, run
through the real agent loop, the real filesystem tools and the real md-vision service, in both
demo arms. In each arm no call is ever repeated and no limit is hit; between the arms, the policy
makes the same search, is shown the same lines of the document and gives the same answer.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap, ReadTracker
from docab.agent.loop import AgentTrace, run_agent
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.limits import SampleLimits
from docab.models.baseline import REGION_LINES, KeywordBaseline
from tests.harness.md_vision_inprocess import md_vision_tools

ARMS = ("fs", "fs+md-vision")
LIMITS = SampleLimits(max_turns=12, max_tokens=200_000, max_wall_s=120)


@dataclass
class ArmRun:
    trace: AgentTrace
    tracker: ReadTracker


async def run_arm(root: Path, question: str, arm: str, budget: OutputBudget | None = None) -> ArmRun:
    text = (root / "document" / "document.md").read_text(encoding="utf-8")
    tracker = ReadTracker(PageMap.from_markdown(text), workspace_root=str(root))
    async with md_vision_tools(root) as mcp:
        trace = await run_agent(
            KeywordBaseline(),
            system="Answer from the document.",
            prompt=f"Question: {question}",
            tools=[*filesystem_tools(root), *(mcp if arm == "fs+md-vision" else [])],
            protocol="submit_tool",
            limits=LIMITS,
            budget=budget or OutputBudget(),
            tracker=tracker,
        )
    return ArmRun(trace, tracker)


def both_arms(root: Path, question: str, budget: OutputBudget | None = None) -> dict[str, ArmRun]:
    return {arm: asyncio.run(run_arm(root, question, arm, budget)) for arm in ARMS}


def check_fair(runs: dict[str, ArmRun]) -> None:
    for arm, run in runs.items():
        calls = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in run.trace.tool_calls]
        assert len(calls) == len(set(calls)), f"{arm} repeated a call: {calls}"
        assert run.trace.status == "ok" and run.trace.submission is not None, (arm, run.trace.errors)
        assert run.trace.turns <= 4
        assert all(not c.is_error for c in run.trace.tool_calls), (arm, run.trace.tool_calls)
    fs, md = runs["fs"], runs["fs+md-vision"]
    searches = [[c.arguments for c in r.trace.tool_calls if c.name == "grep"] for r in (fs, md)]
    assert searches[0] == searches[1]
    assert fs.tracker.shown == md.tracker.shown  # the same lines of document.md, as many characters
    assert fs.tracker.page_shares == md.tracker.page_shares
    assert fs.trace.submission == md.trace.submission
    assert {c.name for c in fs.trace.tool_calls} <= {"grep", "read_file", "submit_answer"}
    assert {c.name for c in md.trace.tool_calls} <= {"grep", "read_md_with_images", "submit_answer"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:  # type: ignore[type-arg]
    from docab_benchmark.mmlongbench.questions import load_questions
    from docab_benchmark.suite import ensure_suite, ensure_suite_corpus

    folder = tmp_path_factory.mktemp("suite") / "suite"
    corpus = ensure_suite_corpus(folder)
    return list(load_questions(ensure_suite(folder)).questions), corpus


def workspace_with(tmp_path: Path, source: Path) -> Path:
    from docab.runner.workspace import copy_document

    copy_document(source, tmp_path / "document")
    return tmp_path


def test_every_suite_question_reads_the_same_regions_in_both_arms(suite, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    questions, corpus = suite
    assert len(questions) == 29
    roots: dict[str, Path] = {}
    read_md = 0
    for question in questions:
        stem = Path(question.doc_id).stem
        if stem not in roots:
            roots[stem] = workspace_with(tmp_path / stem, corpus / stem)
        runs = both_arms(roots[stem], question.question)
        check_fair(runs)
        read_md += sum(c.name == "read_md_with_images" for c in runs["fs+md-vision"].trace.tool_calls)
    assert read_md >= len(questions)  # md-vision's reader is what the treatment arm reads with


def page(number: int, *lines: str) -> str:
    return "\n".join(
        [f"## Page {number}", "", f"![Page {number}](pages/page-{number:04d}.png)", "", *lines, ""]
    )


QUESTION = "What colour is the submarine periscope?"
FILLER = [f"Filler line {i} about nothing in particular." for i in range(150)]
ADVERSARIAL = {
    "no hits": "# Report\n\n" + page(1, "Nothing relevant is written here."),
    "hits on headings only": (
        "# Submarine periscope colours\n\n"
        + page(1, "### Periscope colour", "", "Unrelated words only.")
        + page(2, "### Submarine", "", "More filler text.")
    ),
    "hits on page headings and image references only": "# R\n\n" + page(7, "Nothing here.") + page(8),
    "one line": "The submarine periscope colour is grey.",
    "one line with no newline and no hit": "Nothing to see",
    "empty": "",
    "no page headings": "\n".join([*FILLER[:40], "The submarine periscope colour is grey.", *FILLER[40:80]]),
    "a page longer than one region": "# R\n\n"
    + page(
        1,
        *FILLER[:20],
        "The submarine has a periscope.",
        *FILLER[20:80],
        "The periscope colour is grey on the submarine.",
        *FILLER[80:140],
        "Submarine periscope: grey.",
    ),
    "the same page heading twice": "# R\n\n"
    + page(1, "Intro.")
    + page(2, "The submarine periscope is grey.")
    + page(2, "The submarine periscope colour was grey."),
    "no title": page(1, "The submarine periscope colour is grey.") + page(2, "Other submarine facts."),
    "more headings than the structure search lists": "# R\n\n"
    + "".join(page(n, f"Line of page {n}.") for n in range(1, 601))
    + page(601, "The submarine periscope colour is grey."),
}


@pytest.mark.parametrize("case", list(ADVERSARIAL), ids=list(ADVERSARIAL))
def test_adversarial_documents_never_repeat_a_call_and_read_alike(case: str, tmp_path: Path) -> None:
    """The md-vision arm used to repeat ``read_file offset=1`` until the turn limit whenever no
    search hit mapped to a page ("no page headings", "one line"): finding 1 of issue 13."""
    (tmp_path / "document" / "pages").mkdir(parents=True)
    (tmp_path / "document" / "document.md").write_text(ADVERSARIAL[case], encoding="utf-8")
    runs = both_arms(tmp_path, QUESTION)
    check_fair(runs)
    for run in runs.values():
        reads = [c for c in run.trace.tool_calls if c.name in ("read_file", "read_md_with_images")]
        assert len(reads) <= 2
        for call in reads:
            span = call.arguments.get("line_range") or [0, call.arguments.get("limit", 0) - 1]
            assert span[1] - span[0] + 1 <= REGION_LINES or "section" in call.arguments
    if case in ("no page headings", "one line", "a page longer than one region", "no title"):
        assert runs["fs"].trace.submission is not None and runs["fs"].trace.submission.answer != ""


def test_a_whole_page_is_read_as_its_section_and_a_window_as_a_line_range(tmp_path: Path) -> None:
    text = "# R\n\n" + page(1, "Intro.") + page(2, *FILLER[:70], "The submarine periscope is grey.")
    (tmp_path / "document").mkdir()
    last = page(3, "The submarine periscope colour, again.") + page(4, "Closing words.")
    (tmp_path / "document" / "document.md").write_text(text + last)
    runs = both_arms(tmp_path, QUESTION)
    check_fair(runs)
    md_reads = [c.arguments for c in runs["fs+md-vision"].trace.tool_calls if c.name == "read_md_with_images"]
    fs_reads = [c.arguments for c in runs["fs"].trace.tool_calls if c.name == "read_file"]
    page3 = text.count("\n") + 1
    assert {"uri": "document/document.md", "section": "## Page 3", "max_images": 0} in md_reads
    assert {"path": "document/document.md", "offset": page3, "limit": 5} in fs_reads
    window = next(a for a in md_reads if "line_range" in a)
    first, last = window["line_range"]
    assert last - first + 1 == REGION_LINES and last == page3 - 1  # kept inside page 2
    assert {"path": "document/document.md", "offset": first, "limit": REGION_LINES} in fs_reads


def long_lines_document(seed: int) -> str:
    """Pages of long lines (up to 1,900 characters, under read_file's 2,000-character line cut),
    blank lines and short ones, the question's words scattered: where a budget that counted the
    tools' framing would cut the two arms at different lines."""
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "submarine", "periscope", "colour", "grey", "hull"]
    pages = []
    for number in range(1, 9):
        lines = []
        for _ in range(rng.randint(5, 40)):
            kind = rng.random()
            if kind < 0.2:
                lines.append("")
            elif kind < 0.5:
                lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))))
            else:
                length = rng.randint(40, 400) if rng.random() < 0.6 else rng.randint(400, 1_900)
                line = " ".join(rng.choice(words) for _ in range(length // 5))
                lines.append(line[:length])
        pages.append(page(number, *lines))
    return "# Long lines\n\n" + "".join(pages)


BINDING_BUDGETS = (300, 2_000, 6_000)


@pytest.mark.parametrize("limit", BINDING_BUDGETS)
@pytest.mark.parametrize("seed", range(5))
def test_a_binding_budget_cuts_both_arms_at_the_same_document_lines(
    seed: int, limit: int, tmp_path: Path
) -> None:
    """Issue 24, item 1: at 2,000 characters md-vision used to show more lines than read_file
    (its results carry no line numbers), so pages and shares differed between arms."""
    document = tmp_path / "document"
    document.mkdir()
    (document / "document.md").write_text(long_lines_document(seed), encoding="utf-8")
    budget = OutputBudget(limit=limit)
    truncated = 0
    for question in (QUESTION, "How many grey hulls does the submarine have?", "Which delta gamma colour?"):
        runs = both_arms(tmp_path, question, budget)
        check_fair(runs)
        truncated += sum(c.truncated for c in runs["fs"].trace.tool_calls)
        fs_cut = [c.truncated for c in runs["fs"].trace.tool_calls if c.name == "read_file"]
        md_cut = [
            c.truncated for c in runs["fs+md-vision"].trace.tool_calls if c.name == "read_md_with_images"
        ]
        assert fs_cut == md_cut
        assert runs["fs"].tracker.pages_read == runs["fs+md-vision"].tracker.pages_read
    assert truncated > 0  # the budget did bind
