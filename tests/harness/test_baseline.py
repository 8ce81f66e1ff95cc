"""baseline/keyword: a deterministic offline policy through the same loop and tools as a model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from docab.agent.budget import OutputBudget
from docab.agent.loop import SampleLimits, run_agent
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.models.base import Model
from docab.models.baseline import KeywordBaseline, grep_pattern, keywords, shape_answer
from tests.harness.corpus import write_document


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_document(tmp_path / "document")
    return tmp_path


def ask(workspace: Path, question: str, protocol: str = "submit_tool"):  # type: ignore[no-untyped-def]
    return asyncio.run(
        run_agent(
            KeywordBaseline(),
            system="s",
            prompt=f"Answer from the document.\nQuestion: {question}",
            tools=filesystem_tools(workspace),
            protocol=protocol,  # type: ignore[arg-type]
            limits=SampleLimits(),
            budget=OutputBudget(),
        )
    )


def test_it_is_labelled_a_baseline_and_meets_the_model_protocol() -> None:
    model = KeywordBaseline()
    assert isinstance(model, Model)
    assert model.is_baseline and model.name == "baseline/keyword" and not model.supports_images


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How many employees does Acme have?", "1250"),
        ("What was the net margin percentage?", "12%"),
        ("In what year was Acme Robotics founded?", "1998"),
        ("What is the flagship robot called?", "Hermes"),
    ],
)
def test_searches_reads_and_answers(workspace: Path, question: str, answer: str) -> None:
    trace = ask(workspace, question)
    assert trace.status == "ok" and trace.submission is not None
    assert trace.submission.answer == answer
    # search, structure (the level-1/2 headings), one read turn of up to two regions, answer
    names = [c.name for c in trace.tool_calls]
    assert names[:2] == ["grep", "grep"] and names[-1] == "submit_answer"
    assert set(names[2:-1]) == {"read_file"} and 1 <= len(names[2:-1]) <= 2
    assert trace.tool_calls[1].arguments == {
        "pattern": r"^#{1,2}\s",
        "path": "document/document.md",
        "max_matches": 500,
    }
    assert trace.turns == 4


def test_says_not_answerable_when_nothing_matches(workspace: Path) -> None:
    trace = ask(workspace, "What colour is the submarine fleet's periscope?")
    assert trace.submission is not None and trace.submission.status == "not_answerable"
    assert trace.submission.scored_answer == "Not answerable"


def test_is_deterministic(workspace: Path) -> None:
    runs = [ask(workspace, "How many employees does Acme have?") for _ in range(2)]
    assert [c.arguments for c in runs[0].tool_calls] == [c.arguments for c in runs[1].tool_calls]


def test_answers_in_text_under_the_extraction_protocol(workspace: Path) -> None:
    trace = ask(workspace, "In what year was Acme Robotics founded?", protocol="extraction")
    assert trace.status == "ok" and trace.final_text == "1998" and trace.submission is None


def test_token_counts_are_marked_as_estimates(workspace: Path) -> None:
    trace = ask(workspace, "In what year was Acme Robotics founded?")
    assert all(u.raw and "estimated" in u.raw for u in trace.usage)
    assert trace.usage[1].input_total > trace.usage[0].input_total  # the context grows as it reads


def test_keywords_weigh_what_the_question_asks_about() -> None:
    weights = keywords("How many employees does Acme Robotics have in 2022?")
    assert "the" not in weights and "does" not in weights
    assert weights["employe"] > weights["robotic"] > weights["acme"]
    assert weights["2022"] == 2.0
    assert grep_pattern({}) == r"\w"
    assert grep_pattern(weights).split("|")[0] == "employe"


@pytest.mark.parametrize(
    ("question", "line", "answer"),
    [
        ("What percentage of users are seniors?", "Seniors online: 59 % of adults", "59%"),
        ("How many offices in 2020?", "In 2020 the firm had 1,204 offices", "1204"),
        ("When was it founded?", "Founded in 1998 by two engineers", "1998"),
        ("Is the company profitable?", "Net margin: 12%", "Yes"),
        ("What is the product named?", "The product is named Atlas Prime.", "Atlas Prime"),
        ("What is the capital?", "Capital: Lyon", "Lyon"),
    ],
)
def test_answer_shapes(question: str, line: str, answer: str) -> None:
    assert shape_answer(question, line, keywords(question)) == answer


def test_numbers_near_the_asked_word_and_table_columns() -> None:
    from docab.models.baseline import table_cell

    question = "How many people does Northwind Tools employ?"
    line = "Northwind Tools was founded in 1970 in Ghent. Today the company employs 4759 people and sells"
    assert shape_answer(question, line, keywords(question)) == "4759"
    table = ["Revenue by region, million euro", "Region 2022 2023", "North 58.5 51.7", "East 58.8 66.5"]
    assert table_cell(table, 3, "What was the revenue of the East region in 2023?") == "66.5"
    assert table_cell(table, 3, "What was the revenue of the East region?") is None  # no column named
    assert table_cell(table, 0, "What was the revenue in 2023?") is None  # not a table row


def test_a_refused_submission_is_never_sent_twice() -> None:
    """An answer the answer tool refused is followed by "not answerable", and that by a plain
    reply: the policy never makes the same call twice, whatever the tools say."""
    from docab.messages import ToolCall
    from docab.models.baseline import _History

    question = "What is the flagship robot called?"
    model = KeywordBaseline()
    offered = {"grep", "read_file", "submit_answer"}
    history = _History()

    def step() -> tuple[str, list, str]:  # type: ignore[type-arg]
        text, calls, name = model.decide(question, history, offered)
        for index, (tool, args) in enumerate(calls):
            call = ToolCall(f"c{len(history.calls)}_{index}", tool, args)
            history.calls.append(call)
            hit = "document/document.md:5:The flagship robot is called Hermes."
            history.results[call.id] = "document/document.md:1:# Acme" if name == "structure" else hit
            if tool == "submit_answer":
                history.errors.add(call.id)  # refused, as a broken answer tool would
        return text, calls, name

    steps = [step() for _ in range(6)]
    assert [name for _, _, name in steps] == ["search", "structure", "read", "answer", "answer", "answer"]
    assert steps[3][1] == [("submit_answer", {"status": "answered", "answer": "Hermes"})]
    assert steps[4][1] == [("submit_answer", {"status": "not_answerable", "answer": ""})]
    assert steps[5] == ("Not answerable", [], "answer")
    keys = [(c.name, str(sorted(c.arguments.items()))) for c in history.calls]
    assert len(keys) == len(set(keys))
