"""Tool argument errors as one sentence: the argument, its limit and the value given.

A model that passes a bad argument needs to know which one, what it may be and what it sent;
pydantic's own text (several lines ending in a pydantic.dev URL) says that badly, and names
internals such as ``list[int]``. Here the limit comes from the tool's input schema (what the
model read), the value from the call, and the problem kind from the validator:

    read_md_with_images: max_images must be an integer from 0 to 50; got 51.
    read_md_with_images: uri is required (a string); the call did not give it.
    index_md has no argument 'path'; its arguments are uri, cursor and max_tokens.

Pure functions over plain data: :func:`argument_specs` reads a JSON schema once into
:class:`ArgumentSpec` records, :func:`describe_problems` words the sentence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic_core import ErrorDetails

ProblemKind = Literal["missing", "unknown", "invalid"]
MAX_SHOWN_VALUE = 80  # characters of a given value repeated in the message


@dataclass(frozen=True)
class ArgumentSpec:
    """What one argument may be, read from its JSON schema: its type, bounds and choices."""

    name: str
    types: tuple[str, ...] = ()  # JSON types: "string", "integer", "array", "null" ...
    item_types: tuple[str, ...] = ()  # for arrays
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    choices: tuple[str, ...] = ()
    required: bool = False


@dataclass(frozen=True)
class ArgumentProblem:
    name: str
    kind: ProblemKind


def _types_of(schema: Mapping[str, object]) -> tuple[str, ...]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list):
        return tuple(str(item) for item in kind)
    if isinstance(schema.get("enum"), list):
        return ("string",)
    return ()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _spec(name: str, schema: Mapping[str, object], required: bool) -> ArgumentSpec:
    options = [schema]
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):
        options = [option for option in any_of if isinstance(option, Mapping)]
    types: list[str] = []
    merged: dict[str, object] = {}
    for option in options:
        types.extend(_types_of(option))
        merged.update({key: value for key, value in option.items() if key not in merged})
    items = merged.get("items")
    enum = merged.get("enum")
    minimum = _number(merged.get("minimum"))
    exclusive_minimum = _number(merged.get("exclusiveMinimum"))
    maximum = _number(merged.get("maximum"))
    exclusive_maximum = _number(merged.get("exclusiveMaximum"))
    pattern = merged.get("pattern")
    return ArgumentSpec(
        name=name,
        types=tuple(dict.fromkeys(types)),
        item_types=_types_of(items) if isinstance(items, Mapping) else (),
        minimum=minimum if minimum is not None else _above(exclusive_minimum),
        maximum=maximum if maximum is not None else _below(exclusive_maximum),
        min_items=_count(merged.get("minItems")),
        max_items=_count(merged.get("maxItems")),
        min_length=_count(merged.get("minLength")),
        max_length=_count(merged.get("maxLength")),
        pattern=pattern if isinstance(pattern, str) else None,
        choices=tuple(str(choice) for choice in enum) if isinstance(enum, list) else (),
        required=required,
    )


def _above(bound: float | None) -> float | None:
    return None if bound is None else bound + 1  # integers: > n is >= n + 1


def _below(bound: float | None) -> float | None:
    return None if bound is None else bound - 1


def argument_specs(schema: Mapping[str, object]) -> dict[str, ArgumentSpec]:
    """The arguments of a tool's input schema (an object schema), by name, in schema order."""
    properties = schema.get("properties")
    required = schema.get("required")
    wanted = {str(name) for name in required} if isinstance(required, list) else set()
    if not isinstance(properties, Mapping):
        return {}
    return {
        str(name): _spec(str(name), value, str(name) in wanted)
        for name, value in properties.items()
        if isinstance(value, Mapping)
    }


_ARTICLE = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false"}
_PLURAL = {"integer": "integers", "number": "numbers", "string": "strings", "boolean": "booleans"}


def _bound(value: float) -> str:
    return f"{value:g}" if value != int(value) else f"{int(value):,}"


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"from {_bound(low)} to {_bound(high)}"
    if low is not None:
        return f"of at least {_bound(low)}"
    if high is not None:
        return f"of at most {_bound(high)}"
    return ""


def _count_range(low: int | None, high: int | None, unit: str) -> str:
    if low is not None and low == high:
        return f"exactly {low} {unit}"
    if low is not None and high is not None:
        return f"{low} to {high} {unit}"
    if low is not None:
        return f"at least {low} {unit}"
    if high is not None:
        return f"at most {high} {unit}"
    return ""


def expectation(spec: ArgumentSpec) -> str:
    """What the argument may be, in words: "an integer from 0 to 50", "a list of exactly 2
    integers", "one of plain, markdown, json", each alternative joined by "or"."""
    parts: list[str] = []
    if spec.choices:
        parts.append("one of " + ", ".join(spec.choices))
    for kind in spec.types:
        if kind == "null" or (kind == "string" and spec.choices):
            continue
        if kind in ("integer", "number"):
            limit = _range(spec.minimum, spec.maximum)
            parts.append(f"{_ARTICLE[kind]} {limit}".strip())
        elif kind == "string":
            length = _count_range(spec.min_length, spec.max_length, "characters")
            text = "a string" + (f" of {length}" if length else "")
            if spec.pattern:
                text += f" matching {spec.pattern}"
            parts.append(text)
        elif kind == "array":
            items = " or ".join(_PLURAL.get(item, "values") for item in spec.item_types) or "values"
            count = _count_range(spec.min_items, spec.max_items, items)
            parts.append(f"a list of {count}" if count else f"a list of {items}")
        elif kind == "object":
            parts.append("an object")
        else:
            parts.append(_ARTICLE.get(kind, kind))
    if "null" in spec.types:
        parts.append("null (or left out)")
    return " or ".join(parts) or "a valid value"


def shown_value(value: object) -> str:
    """The value a call gave, as JSON, cut to :data:`MAX_SHOWN_VALUE` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > MAX_SHOWN_VALUE:
        text = text[: MAX_SHOWN_VALUE - 1] + "…"
    return text


def _listing(names: Sequence[str]) -> str:
    if not names:
        return "it takes no arguments"
    if len(names) == 1:
        return f"its only argument is {names[0]}"
    return f"its arguments are {', '.join(names[:-1])} and {names[-1]}"


def describe_problem(
    tool: str, problem: ArgumentProblem, specs: Mapping[str, ArgumentSpec], arguments: Mapping[str, object]
) -> str:
    """One sentence for one bad argument."""
    if problem.kind == "unknown":
        return (
            f"{tool} has no argument {problem.name!r} (given {shown_value(arguments.get(problem.name))}); "
            f"{_listing(list(specs))}."
        )
    spec = specs.get(problem.name, ArgumentSpec(problem.name))
    if problem.kind == "missing":
        return f"{tool}: {problem.name} is required ({expectation(spec)}); the call did not give it."
    return (
        f"{tool}: {problem.name} must be {expectation(spec)}; got {shown_value(arguments.get(problem.name))}."
    )


def describe_problems(
    tool: str,
    problems: Sequence[ArgumentProblem],
    specs: Mapping[str, ArgumentSpec],
    arguments: Mapping[str, object],
) -> str:
    """The message for a call's bad arguments: one sentence each, in the schema's order."""
    order = {name: position for position, name in enumerate(specs)}
    unique = list(dict.fromkeys(problems))
    unique.sort(key=lambda problem: order.get(problem.name, len(order)))
    return " ".join(describe_problem(tool, problem, specs, arguments) for problem in unique)


def unknown_arguments(
    specs: Mapping[str, ArgumentSpec], arguments: Mapping[str, object]
) -> list[ArgumentProblem]:
    """The arguments a call gave that the tool does not take."""
    return [ArgumentProblem(str(name), "unknown") for name in arguments if name not in specs]


def problems_from_validation(errors: Sequence[ErrorDetails]) -> list[ArgumentProblem]:
    """The arguments a validator rejected (pydantic's error records), one problem each."""
    problems: list[ArgumentProblem] = []
    for error in errors:
        location = error["loc"]
        if not location:
            continue
        name = str(location[0])
        kind: ProblemKind
        if error["type"] == "missing" and len(location) == 1:
            kind = "missing"
        elif error["type"] == "extra_forbidden":
            kind = "unknown"
        else:
            kind = "invalid"
        problems.append(ArgumentProblem(name, kind))
    return problems
