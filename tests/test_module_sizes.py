"""No room grows past about 600 lines without saying why (issue 27, docs/architecture.md).

A module of the harness, the benchmark or a server that is longer than :data:`MAX_LINES` must
say, in its docstring, why it is one module: a paragraph that starts ``Why one module:`` and gives
a reason (at least :data:`MIN_REASON_CHARS` characters). The rule keeps splitting the default and
a large module a decision someone wrote down.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    ROOT / "harness" / "docab",
    ROOT / "benchmark" / "docab_benchmark",
    ROOT / "tools" / "md_vision" / "md_vision",
    ROOT / "tools" / "markfetch" / "markfetch",
    ROOT / "tools" / "vision_bridge" / "vision_bridge",
    ROOT / "tools" / "mcpguard" / "docab_mcpguard",
)
MAX_LINES = 600
MARKER = "Why one module:"
MIN_REASON_CHARS = 80


@dataclass(frozen=True)
class Oversized:
    path: Path
    lines: int
    reason: str  # "" when the docstring gives none


def reason_of(source: str) -> str:
    """The text after ``Why one module:`` in the module docstring, up to the paragraph's end."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    _, marker, rest = docstring.partition(MARKER)
    if not marker:
        return ""
    return " ".join(rest.split("\n\n", 1)[0].split())


def oversized_modules(folders: tuple[Path, ...], max_lines: int = MAX_LINES) -> list[Oversized]:
    """Every ``.py`` under ``folders`` longer than ``max_lines``, with the reason it gives."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = source.count("\n") + (not source.endswith("\n") and bool(source))
            if lines > max_lines:
                found.append(Oversized(path, lines, reason_of(source)))
    return found


def test_every_source_folder_exists() -> None:
    assert [folder for folder in SOURCES if not folder.is_dir()] == []


def test_every_module_over_the_limit_says_why_it_is_one_module() -> None:
    unexplained = [
        f"{item.path.relative_to(ROOT)} ({item.lines} lines)"
        for item in oversized_modules(SOURCES)
        if len(item.reason) < MIN_REASON_CHARS
    ]
    assert unexplained == [], (
        f"modules over {MAX_LINES} lines need a '{MARKER}' paragraph in their docstring "
        f"(at least {MIN_REASON_CHARS} characters), or a split: {unexplained}"
    )


def test_the_rule_finds_a_long_module_without_a_reason_and_accepts_one_with_it(tmp_path: Path) -> None:
    body = "x = 1\n" * 700
    (tmp_path / "silent.py").write_text('"""A long module."""\n' + body)
    (tmp_path / "short_reason.py").write_text('"""A long module.\n\nWhy one module: because."""\n' + body)
    reason = "the parts share one state and one order, and apart each would reach into the others' internals"
    (tmp_path / "explained.py").write_text(f'"""A long module.\n\n{MARKER} {reason}.\n\nMore."""\n' + body)
    (tmp_path / "small.py").write_text('"""Small."""\nx = 1\n')

    found = {item.path.name: item for item in oversized_modules((tmp_path,))}

    assert set(found) == {"silent.py", "short_reason.py", "explained.py"}
    assert found["silent.py"].reason == ""
    assert found["short_reason.py"].reason == "because."
    assert found["explained.py"].reason == reason + "."
    assert found["explained.py"].lines == 705
