"""The heading index: typed records and the text format ``index_md`` returns (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from md_vision.document import MAX_STRUCTURE, Document, StructureEnd, parse_document


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
    # Where the parse stopped reading headings and images (shown as `indexed_lines=1-N`); None: all.
    structure_end: StructureEnd | None = None


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file a folder index could not include, and why (shown in place of its index)."""

    path: str
    reason: str


# A heading longer than this is shown cut, with its length: a hostile file's one 10 MB heading
# would otherwise fill an index page whatever its max_tokens (a page always shows one row). The
# section is still read whole by its line_range (from line_start).
MAX_HEADING_CHARS = 300


def shown_heading(label: str, limit: int = MAX_HEADING_CHARS) -> str:
    """``label`` as the index shows it: whole, or its first ``limit`` characters and its length."""
    if len(label) <= limit:
        return label
    return f"{label[:limit]}… (heading of {len(label):,} characters, cut; read it by line_range)"


# The frontmatter is shown up to this many characters, for the same reason.
MAX_FRONTMATTER_CHARS = 4000


def shown_frontmatter(text: str, limit: int = MAX_FRONTMATTER_CHARS) -> str:
    """The frontmatter as the index shows it: whole, or its first ``limit`` characters and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n# … (frontmatter of {len(text):,} characters, cut; read it by line_range)"


def index_document(document: Document, path: str | None = None) -> FileIndex:
    rows = []
    for number, heading in enumerate(document.headings):
        first, last = heading.line, document.section_end(number)
        rows.append(
            IndexRow(
                heading=shown_heading(heading.label),
                line_start=first,
                image_count=len(document.images_between(first, last)),
                char_count=document.char_count_of(first, last),
            )
        )
    return FileIndex(
        path=path,
        frontmatter=shown_frontmatter(document.frontmatter.text) if document.frontmatter else None,
        line_count=document.line_count,
        char_count=document.char_count,
        rows=tuple(rows),
        structure_end=document.structure_end,
    )


def index_text(text: str, path: str | None = None) -> FileIndex:
    """Index markdown held in memory."""
    return index_document(parse_document(text), path)


def _attribute(value: str) -> str:
    # A file name may hold a line break or "<": written raw, it could add rows or tags to the
    # index the model reads.
    return value.translate(_ATTRIBUTE_ESCAPES)


_ATTRIBUTE_ESCAPES = str.maketrans(
    {"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;", "\n": "&#10;", "\r": "&#13;"}
)


def _cell(value: str) -> str:
    return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def _fence_for(body: str) -> str:
    longest = run = 0
    for char in body:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


TSV_HEADER = "heading\tline_start\tn_images\tchar_count\n"


def format_row(row: IndexRow) -> str:
    return f"{_cell(row.heading)}\t{row.line_start}\t{row.image_count}\t{row.char_count}\n"


def format_file_index(index: FileIndex, first_row: int = 0, end_row: int | None = None) -> str:
    """``<file path=… lines=N chars=M>``, the frontmatter, a fenced ``tsv`` block, ``</file>``.

    With a row window (a page of a file whose index is larger than one result) the tag says which
    rows it holds, ``rows=101-200/950`` (1-based), and the frontmatter comes with the first rows.
    """
    path = f' path="{_attribute(index.path)}"' if index.path is not None else ""
    end = len(index.rows) if end_row is None else end_row
    window = ""
    if first_row > 0 or end < len(index.rows):
        window = f" rows={first_row + 1}-{end}/{len(index.rows)}"
    if index.structure_end is not None:
        window += f" indexed_lines=1-{index.structure_end.line}"
    parts = [f"<file{path} lines={index.line_count} chars={index.char_count}{window}>\n"]
    if index.frontmatter is not None and first_row == 0:
        frontmatter = index.frontmatter
        if frontmatter and not frontmatter.endswith(("\n", "\r")):
            frontmatter += "\n"
        parts.append(f"---\n{frontmatter}---\n")
    table = TSV_HEADER + "".join(format_row(row) for row in index.rows[first_row:end])
    fence = _fence_for(table) if "```" in table else "```"
    parts.append(f"{fence}tsv\n{table}{fence}\n</file>")
    return "".join(parts)


def structure_note(index: FileIndex) -> str | None:
    """What a reader of a cut-short index must know (None when the index is whole)."""
    end = index.structure_end
    if end is None:
        return None
    name = index.path or "the document"
    why = (
        f"has more than {MAX_STRUCTURE:,} headings and images, so only those"
        if end.reason == "cap"
        else f"has a block too dense to parse in pieces from line {end.line + 1:,}, so only the headings and images"
    )
    return (
        f"{name} {why} on lines 1-{end.line} are indexed (of {index.line_count:,}); the text after "
        "them can still be read with line_range, without its images."
    )


def format_problem(problem: FileProblem) -> str:
    return f'<file path="{_attribute(problem.path)}" error="{_attribute(problem.reason)}"></file>'


def format_index(entries: Iterable[FileIndex | FileProblem]) -> str:
    """Files joined by a blank line, in the order given."""
    return "\n\n".join(
        format_file_index(entry) if isinstance(entry, FileIndex) else format_problem(entry)
        for entry in entries
    )


# -- the compact overview of a large folder ---------------------------------------------------

OVERVIEW_HEADINGS = 8  # headings listed per file in the overview; more are counted


def top_rows(index: FileIndex) -> tuple[IndexRow, ...]:
    """A file's top-level headings: those of its highest level, and when that is a lone title, the
    level below it too."""
    if not index.rows:
        return ()
    levels = [len(row.heading) - len(row.heading.lstrip("#")) for row in index.rows]
    top = min(levels)
    chosen = [row for row, level in zip(index.rows, levels, strict=True) if level == top]
    if len(chosen) == 1:
        below = [level for level in levels if level > top]
        if below:
            second = min(below)
            chosen = [row for row, level in zip(index.rows, levels, strict=True) if level in (top, second)]
    return tuple(chosen)


def top_headings(index: FileIndex, limit: int = OVERVIEW_HEADINGS) -> str:
    """A file's top-level headings (:func:`top_rows`), ``; ``-separated; beyond ``limit``, how many
    more there are."""
    chosen = [row.heading for row in top_rows(index)]
    if not chosen:
        return ""
    shown = "; ".join(_cell(heading) for heading in chosen[:limit])
    if len(chosen) > limit:
        shown += f"; … (+{len(chosen) - limit})"
    return shown


OVERVIEW_HEADER = "file\tlines\tchars\ttop_headings\n"


def format_overview_row(relative: str, entry: FileIndex | FileProblem) -> str:
    """One file of the overview: its path in the folder, size and top-level headings (or the
    reason it could not be indexed)."""
    if isinstance(entry, FileProblem):
        return f"{_cell(relative)}\t\t\t(not indexed: {_cell(entry.reason)})\n"
    return f"{_cell(relative)}\t{entry.line_count}\t{entry.char_count}\t{top_headings(entry)}\n"


def format_overview(path: str, total: int, first: int, rows: list[str]) -> str:
    """``<overview path=… files=N shown=A-B>`` around a ``tsv`` block of :func:`format_overview_row`
    lines (files ``first``+1 onwards, 1-based in the tag)."""
    table = OVERVIEW_HEADER + "".join(rows)
    fence = _fence_for(table) if "```" in table else "```"
    shown = f"{first + 1}-{first + len(rows)}"
    return f'<overview path="{_attribute(path)}" files={total} shown={shown}>\n{fence}tsv\n{table}{fence}\n</overview>'


def format_folders(path: str, counts: list[tuple[str, int]], limit: int = 200) -> str:
    """The subfolders of a folder with how many markdown files each holds (``.`` for files at its
    top), for narrowing a large folder down before reading its overview."""
    lines = [f"{_cell(name)}\t{count}\n" for name, count in counts[:limit]]
    if len(counts) > limit:
        rest = sum(count for _name, count in counts[limit:])
        lines.append(f"({len(counts) - limit} more folders)\t{rest}\n")
    table = "folder\tfiles\n" + "".join(lines)
    fence = _fence_for(table) if "```" in table else "```"
    return f'<folders path="{_attribute(path)}">\n{fence}tsv\n{table}{fence}\n</folders>'
