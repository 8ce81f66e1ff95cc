"""Tool argument errors in one sentence: the argument, its limit and the value given, never
pydantic's text (docab_mcpguard.arguments)."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from docab_mcpguard.arguments import (
    ArgumentProblem,
    argument_specs,
    describe_problems,
    expectation,
    problems_from_validation,
    shown_value,
    unknown_arguments,
)


class Arguments(BaseModel):
    uri: Annotated[str, Field(min_length=1, max_length=10)]
    line_range: Annotated[list[int] | None, Field(min_length=2, max_length=2)] = None
    max_images: Annotated[int, Field(ge=0, le=50)] = 10
    format: Literal["plain", "markdown", "json"] = "plain"
    images: Annotated[list[str], Field(min_length=2, max_length=4)] = ["a", "b"]
    url: Annotated[str, Field(pattern=r"^https?://\S+$")] = "http://x"
    raw: bool = False
    tokens: Annotated[int, Field(gt=0)] = 1


SCHEMA = Arguments.model_json_schema()
SPECS = argument_specs(SCHEMA)


def _message(arguments: dict[str, object]) -> str:
    problems = unknown_arguments(SPECS, arguments)
    try:
        Arguments.model_validate({key: value for key, value in arguments.items() if key in SPECS})
    except ValidationError as exc:
        problems += problems_from_validation(exc.errors(include_url=False))
    return describe_problems("read_md", problems, SPECS, arguments)


def test_the_schema_is_read_once_into_typed_specs() -> None:
    assert list(SPECS) == ["uri", "line_range", "max_images", "format", "images", "url", "raw", "tokens"]
    assert SPECS["uri"].required and not SPECS["max_images"].required
    assert (SPECS["max_images"].minimum, SPECS["max_images"].maximum) == (0, 50)
    assert SPECS["line_range"].types == ("array", "null") and SPECS["line_range"].item_types == ("integer",)
    assert SPECS["format"].choices == ("plain", "markdown", "json")
    assert SPECS["tokens"].minimum == 1  # exclusiveMinimum 0 on an integer


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("uri", "a string of 1 to 10 characters"),
        ("line_range", "a list of exactly 2 integers or null (or left out)"),
        ("max_images", "an integer from 0 to 50"),
        ("format", "one of plain, markdown, json"),
        ("images", "a list of 2 to 4 strings"),
        ("url", r"a string matching ^https?://\S+$"),
        ("raw", "true or false"),
        ("tokens", "an integer of at least 1"),
    ],
)
def test_each_limit_in_words(name: str, words: str) -> None:
    assert expectation(SPECS[name]) == words


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ({"uri": "a", "max_images": 51}, "read_md: max_images must be an integer from 0 to 50; got 51."),
        (
            {"uri": "a", "max_images": "ten"},
            'read_md: max_images must be an integer from 0 to 50; got "ten".',
        ),
        (
            {"max_images": 3},
            "read_md: uri is required (a string of 1 to 10 characters); the call did not give it.",
        ),
        (
            {"uri": "a", "path": "x"},
            "read_md has no argument 'path' (given \"x\"); its arguments are uri, line_range, max_images, "
            "format, images, url, raw and tokens.",
        ),
        ({"uri": "a", "line_range": [3]}, "read_md: line_range must be a list of exactly 2 integers or null"),
        ({"uri": "a", "format": "pdf"}, 'read_md: format must be one of plain, markdown, json; got "pdf".'),
        ({"uri": "a", "images": ["x"]}, 'read_md: images must be a list of 2 to 4 strings; got ["x"].'),
        ({"uri": "a", "raw": "maybe"}, 'read_md: raw must be true or false; got "maybe".'),
    ],
)
def test_one_sentence_per_bad_argument(arguments: dict[str, object], sentence: str) -> None:
    message = _message(arguments)
    assert message.startswith(sentence)
    assert message.count("read_md") == 1 and message.endswith(".")  # one sentence
    for noise in ("pydantic", "validation error", "Input should", "type=", "https://errors"):
        assert noise not in message


def test_several_bad_arguments_each_get_a_sentence_in_schema_order() -> None:
    message = _message({"max_images": -1, "format": "pdf"})
    assert message.index("uri is required") < message.index("max_images must") < message.index("format must")


def test_a_long_value_is_cut() -> None:
    assert len(shown_value("x" * 500)) == 80 and shown_value("x" * 500).endswith("…")
    assert shown_value({"a": [1, 2]}) == '{"a": [1, 2]}'


def test_a_tool_without_arguments_says_so() -> None:
    message = describe_problems("ping", [ArgumentProblem("x", "unknown")], {}, {"x": 1})
    assert message == "ping has no argument 'x' (given 1); it takes no arguments."
