"""The heading index: typed records and the text format ``index_md`` returns (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from md_vision.document import Document, parse_document


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One heading. Counts cover the whole section, subsections included."""

    heading: str  # with its marker, e.g. "## Setup"; a later duplicate reads "## Setup (2)"
    line_start: int
    image_count: int
    char_count: int


@dataclass(frozen=True, slots=True)
class FileIndex:
    """The index of one markdown file (or text)."""

    path: str | None
    frontmatter: str | None  # the YAML between the fences, when the file has frontmatter
    line_count: int
    char_count: int
    rows: tuple[IndexRow, ...]


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file a folder index could not include, and why (shown in place of its index)."""

    path: str
    reason: str


def index_document(document: Document, path: str | None = None) -> FileIndex:
    rows = []
    for number, heading in enumerate(document.headings):
        first, last = heading.line, document.section_end(number)
        rows.append(
            IndexRow(
                heading=heading.label,
                line_start=first,
                image_count=len(document.images_between(first, last)),
                char_count=document.char_count_of(first, last),
            )
        )
    return FileIndex(
        path=path,
        frontmatter=document.frontmatter.text if document.frontmatter else None,
        line_count=document.line_count,
        char_count=document.char_count,
        rows=tuple(rows),
    )


def index_text(text: str, path: str | None = None) -> FileIndex:
    """Index markdown held in memory."""
    return index_document(parse_document(text), path)


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _cell(value: str) -> str:
    return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def _fence_for(body: str) -> str:
    longest = run = 0
    for char in body:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def format_file_index(index: FileIndex) -> str:
    """``<file path=… lines=N chars=M>``, the frontmatter, a fenced ``tsv`` block, ``</file>``."""
    path = f' path="{_attribute(index.path)}"' if index.path is not None else ""
    parts = [f"<file{path} lines={index.line_count} chars={index.char_count}>\n"]
    if index.frontmatter is not None:
        frontmatter = index.frontmatter
        if frontmatter and not frontmatter.endswith(("\n", "\r")):
            frontmatter += "\n"
        parts.append(f"---\n{frontmatter}---\n")
    table = "heading\tline_start\tn_images\tchar_count\n" + "".join(
        f"{_cell(row.heading)}\t{row.line_start}\t{row.image_count}\t{row.char_count}\n" for row in index.rows
    )
    fence = _fence_for(table) if "```" in table else "```"
    parts.append(f"{fence}tsv\n{table}{fence}\n</file>")
    return "".join(parts)


def format_problem(problem: FileProblem) -> str:
    return f'<file path="{_attribute(problem.path)}" error="{_attribute(problem.reason)}"></file>'


def format_index(entries: Iterable[FileIndex | FileProblem]) -> str:
    """Files joined by a blank line, in the order given."""
    return "\n\n".join(
        format_file_index(entry) if isinstance(entry, FileIndex) else format_problem(entry)
        for entry in entries
    )
