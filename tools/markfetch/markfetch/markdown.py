"""HTML (an lxml tree) to GitHub-flavoured markdown.

A small, strict converter for the reader-view body: ATX headings, paragraphs, nested lists with
task-list items, fenced code with a language hint, GFM tables, block quotes, emphasis,
strikethrough, links and images made absolute against the page URL. Escaping is minimal and
exact: only what CommonMark would otherwise misread is escaped, so ``snake_case`` stays
``snake_case`` and prose stays readable; code is never escaped.

Pure: no I/O; the caller resolves URLs by passing the page's base URL.

Why one module: the renderer is one recursion (blocks hold lists, quotes and tables, whose items
and cells hold blocks again) that shares the escaping rules, the URL filter and the limits on
what a hostile page can make it write (table width, list numbers); split up, each part would
import the others back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from urllib.parse import urljoin

from lxml import etree

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Elements whose content (and the element itself) never reaches the reader.
SKIPPED = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed",
        "canvas", "video", "audio", "source", "track", "map", "area", "head", "title", "meta",
        "link", "base", "button", "select", "option", "textarea", "input", "form", "dialog", "nav",
    }
)  # fmt: skip
BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "figure", "figcaption",
        "blockquote", "pre", "ul", "ol", "dl", "dt", "dd", "li", "table", "thead", "tbody", "tfoot",
        "tr", "td", "th", "caption", "hr", "address", "details", "summary", "fieldset", "legend",
        "center", "body", "html", "hgroup", "picture", *HEADINGS,
    }
)  # fmt: skip
TASK_DONE, TASK_OPEN = "\u2611", "\u2610"  # ☑ ☐: markers the HTML preparation puts in list items
# The HTML preparation writes each <hr> as a paragraph of this text, which the reader view keeps
# (it turns a rule into a line break); the renderer writes it as a rule again.
RULE_MARK = "\u2042markfetch-rule\u2042"
# A table is written as a grid (colspans spread over the columns they span, short rows filled)
# only up to this many columns. A wider one is written row by row as its cells stand: padding
# every row to the widest one let one header row of 100 cells spanning 50 columns each turn a
# 177 KB page into 90 MB of empty cells. The widest table on the extraction benchmark's pages
# has 7 columns.
MAX_TABLE_COLUMNS = 64
# CommonMark's largest list number (nine digits): a longer one is no list marker, and a page's
# 4,200-digit <li value> indented every line of the item, and of each list inside it, that far.
MAX_LIST_NUMBER = 999_999_999
# Lists, quotes and definitions nested deeper than this add no more indentation: each level
# prefixes every line inside it, so 190 nested quotes around 60,000 lines made 23 MB of markdown
# from a 308 KB page.
MAX_INDENT_DEPTH = 16


class RenderTooLarge(Exception):
    """The markdown being written passed the renderer's budget (``MarkdownRenderer.budget``)."""


_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")  # \u00a0 kept out of code only
# Placeholder for <br> while inline text is being normalised. Page text reaches inline rendering
# through escape_text or as a code span, which both turn U+2028 and U+2029 into spaces, so one on
# the page cannot pose as a line break (it split a code span, and the next line began with raw HTML).
_HARD_BREAK = "\u2028"
_PAGE_SEPARATORS = str.maketrans({"\u2028": " ", "\u2029": " "})
_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|highlight|hljs|brush|sourceCode)-?([A-Za-z0-9_+#.\-]+)$")
_LANGUAGE_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_+#.\-]{0,30}$")
_NOT_LANGUAGES = frozenset(
    {"highlight", "hljs", "code", "source", "sourcecode", "notranslate", "default", "none", "plain", "text",
     "nohighlight", "block", "line", "lines", "numbers", "wrap", "prettyprint", "linenums", "copy"}
)  # fmt: skip

# Escaping: characters that would start markup in the middle of a line.
_ESCAPE_ALWAYS = re.compile(r"([\\`*\[\]])")
_ESCAPE_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
# Underscore and tilde only where they could open or close emphasis: not inside a word.
_ESCAPE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ESCAPE_TILDES = re.compile(r"~")  # GFM strikes through single tildes too
# Markers that mean something only at the start of a line.
_BLOCK_START = re.compile(
    r"^(?P<indent> {0,3})(?:(?P<hash>#{1,6})(?=[ \t]|$)|(?P<quote>>)|(?P<bullet>[-+*])(?=[ \t]|$)"
    r"|(?P<num>\d{1,9})(?P<delim>[.)])(?=[ \t]|$)|(?P<rule>(?:[-=_*][ \t]*){3,}$)|(?P<fence>```|~~~))"
)


def escape_text(text: str) -> str:
    """Escape prose so CommonMark reads it literally (without touching intraword underscores);
    its line and paragraph separators become spaces (see ``_HARD_BREAK``)."""
    text = _ESCAPE_ALWAYS.sub(r"\\\1", text.translate(_PAGE_SEPARATORS))
    text = _ESCAPE_TAG_START.sub(r"\\<", text)
    text = _ESCAPE_UNDERSCORE.sub(r"\\_", text)
    return _ESCAPE_TILDES.sub(r"\\~", text)


def escape_line_start(line: str) -> str:
    """Escape a heading, quote, list, rule or fence marker at the start of a paragraph line."""
    match = _BLOCK_START.match(line)
    if not match:
        return line
    indent = match.group("indent")
    rest = line[len(indent) :]
    if match.group("num") is not None:
        digits = match.group("num")
        return f"{indent}{digits}\\{rest[len(digits) :]}"
    return f"{indent}\\{rest}"


def code_span(text: str) -> str:
    """Inline code with a fence longer than any backtick run inside it."""
    text = text.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = (
        " "
        if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" "))
        else ""
    )
    return f"{fence}{pad}{text}{pad}{fence}"


def language_hint(element: etree._Element, levels: int = 3) -> str | None:
    """The code language named by ``language-X``/``lang-X``/``highlight-X`` classes or ``data-lang``.

    Looks at the element, its code child and a few ancestors (Sphinx puts ``highlight-python`` on
    a wrapper ``div``).
    """
    candidates: list[etree._Element] = [element]
    candidates.extend(child for child in element if isinstance(child.tag, str) and child.tag == "code")
    parent = element.getparent()
    for _ in range(levels):
        if parent is None:
            break
        candidates.append(parent)
        parent = parent.getparent()
    for candidate in candidates:
        for attribute in ("data-lang", "data-language", "lang"):
            value = (candidate.get(attribute) or "").strip()
            if attribute != "lang" and _LANGUAGE_WORD.match(value) and value.lower() not in _NOT_LANGUAGES:
                return value.lower()
        for cls in (candidate.get("class") or "").split():
            match = _LANGUAGE_CLASS.match(cls)
            if match and match.group(1).lower() not in _NOT_LANGUAGES:
                return match.group(1).lower()
    return None


def language_name(word: str) -> str | None:
    """``word`` as a code language's name in lower case, or None when it cannot be one (a
    highlighter's own names: "plain", "text", "nohighlight" ...)."""
    name = word.strip().lower()
    return name if _LANGUAGE_WORD.match(name) and name not in _NOT_LANGUAGES else None


def _tag(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):  # comments, processing instructions
        return ""
    return tag.rsplit("}", 1)[-1].lower()


def code_block_text(element: etree._Element) -> str:
    """Text of a code block with <br> as newlines and markup (highlighting spans) dropped."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        tag = _tag(node)
        if tag == "br":
            parts.append("\n")
        elif tag and tag not in ("script", "style", "button"):
            if node.text:
                parts.append(node.text)
            for child in node:
                walk(child)
                if child.tail:
                    parts.append(child.tail)
        if tag in ("div", "p", "li", "tr") and parts and not parts[-1].endswith("\n"):
            parts.append("\n")

    if element.text:
        parts.append(element.text)
    for child in element:
        walk(child)
        if child.tail:
            parts.append(child.tail)
    text = "".join(parts).replace("\r\n", "\n").replace("\u00a0", " ")
    lines = text.split("\n")
    # Sliced, not popped: pop(0) shifts the list, so a page of blank lines cost quadratic time.
    shown = [index for index, line in enumerate(lines) if line.strip()]
    return "\n".join(line.rstrip() for line in lines[shown[0] : shown[-1] + 1]) if shown else ""


# A fence line's indent is spaces and tabs: ``\s*`` also crossed newlines, so the search rescanned
# a run of blank lines from each of its line starts (quadratic, in one call holding the GIL).
_FENCE_RUN = re.compile(r"^[ \t]*(`{3,})", re.MULTILINE)


def _fence_for(code: str) -> str:
    longest = max((len(run) for run in _FENCE_RUN.findall(code)), default=0)
    return "`" * max(3, longest + 1)


def _indent(text: str, prefix: str, first: str | None = None) -> str:
    """Prefix every line (``first`` on the first one); blank lines get the prefix without its spaces."""
    out: list[str] = []
    for i, line in enumerate(text.split("\n")):
        lead = first if i == 0 and first is not None else prefix
        out.append(lead + line if line else lead.rstrip())
    return "\n".join(out)


def _is_safe_url(url: str) -> bool:
    # Browsers drop tabs and line breaks anywhere in a URL and controls and spaces around it, so
    # "java\tscript:" is javascript: to them; the scheme is read as they read it.
    cleaned = _URL_IGNORED.sub("", url)
    return not re.match(r"(javascript|vbscript|data):", cleaned, re.IGNORECASE)


_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]")


def link_destination(url: str) -> str:
    """``url`` as a link destination that nothing in it can end early: in ``<...>`` when it holds
    spaces or parentheses, with angle brackets and controls percent-encoded (a ``>`` ended the
    destination, and what followed became a live link of its own)."""
    encoded = _DESTINATION_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), url)
    return f"<{encoded}>" if re.search(r"[ ()]", encoded) else encoded


_DESTINATION_UNSAFE = re.compile(r"[\x00-\x1f\x7f<>]")


@dataclass
class MarkdownRenderer:
    """Render an lxml (HTML vocabulary) tree. ``code_language`` may name a code block's language."""

    base_url: str | None = None
    code_language: Callable[[str], str | None] = field(default=lambda _code: None)
    images: bool = True
    # Characters the renderer may write, counted where a block is built (a nested list or quote
    # is built again by each level holding it, so this bounds the work too); None: no limit.
    budget: int | None = None
    _spent: int = field(default=0, init=False)
    _depth: int = field(default=0, init=False)

    def _built(self, text: str) -> str:
        """``text``, a block just built, counted against the budget."""
        self._spent += len(text)
        if self.budget is not None and self._spent > self.budget:
            raise RenderTooLarge(
                f"the page's markdown passed {self.budget:,} characters while it was written, too much "
                "to return; markfetch stopped there"
            )
        return text

    # -- entry point ---------------------------------------------------------------------------
    def render(self, root: etree._Element) -> str:
        blocks = (
            self._blocks(root) if _tag(root) not in HEADINGS and _tag(root) != "pre" else self._block(root)
        )
        text = "\n\n".join(block for block in blocks if block.strip())
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n" if text.strip() else ""

    # -- URLs ----------------------------------------------------------------------------------
    def url(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        raw = raw.strip()
        if not raw or not _is_safe_url(raw):
            return None
        if self.base_url:
            try:
                return urljoin(self.base_url, raw)
            except ValueError:
                return raw
        return raw

    # -- blocks --------------------------------------------------------------------------------
    def _blocks(self, element: etree._Element) -> list[str]:
        """Render the children of ``element``: runs of inline content become paragraphs."""
        out: list[str] = []
        inline: list[str] = []

        def flush() -> None:
            paragraph = self._finish_inline("".join(inline))
            inline.clear()
            if paragraph:
                out.append(paragraph)

        if element.text:
            inline.append(escape_text(element.text))
        for child in element:
            tag = _tag(child)
            if tag and tag not in SKIPPED:
                if tag in BLOCKS:
                    flush()
                    out.extend(self._block(child))
                else:
                    inline.append(self._inline(child))
            if child.tail:
                inline.append(escape_text(child.tail))
        flush()
        return out

    def _block(self, element: etree._Element) -> list[str]:
        tag = _tag(element)
        if tag in HEADINGS:
            text = self._finish_inline(self._inline_children(element), single_line=True)
            return [self._built(f"{'#' * HEADINGS[tag]} {text}")] if text else []
        if tag == "pre":
            return self._code_block(element)
        if tag in ("ul", "ol", "dl", "blockquote"):
            self._depth += 1
            try:
                return self._nested_block(element, tag)
            finally:
                self._depth -= 1
        if tag == "table":
            return self._table(element)
        if tag == "hr" or (tag == "p" and len(element) == 0 and (element.text or "").strip() == RULE_MARK):
            return ["---"]
        if tag == "li":  # a stray item outside any list
            return self._list_items([element], ordered=False, start=1)
        return self._blocks(element)

    def _nested_block(self, element: etree._Element, tag: str) -> list[str]:
        if tag == "dl":
            return self._definition_list(element)
        if tag == "ul" or tag == "ol":
            return self._list(element, ordered=tag == "ol")
        blocks = self._blocks(element)
        if self._flat:  # handed up as they are: joined, each level would copy them all again
            return blocks
        inner = "\n\n".join(blocks)
        return [self._built(_indent(inner, "> "))] if inner.strip() else []

    @property
    def _flat(self) -> bool:
        """Nested past MAX_INDENT_DEPTH: no more indentation, and blocks stay apart."""
        return self._depth > MAX_INDENT_DEPTH

    def _code_block(self, element: etree._Element) -> list[str]:
        code = code_block_text(element)
        if not code.strip():
            return []
        language = language_hint(element) or self.code_language(code) or ""
        fence = _fence_for(code)
        return [self._built(f"{fence}{language}\n{code}\n{fence}")]

    def _list(self, element: etree._Element, *, ordered: bool) -> list[str]:
        items = [child for child in element if _tag(child) == "li"]
        if not items:  # malformed lists: render what they hold
            blocks = self._blocks(element)
            joined = "\n\n".join(blocks)
            return blocks if self._flat else [self._built(joined)] if joined else []
        start = _list_number(element.get("start")) if ordered else None
        return self._list_items(items, ordered=ordered, start=1 if start is None else start)

    def _list_items(self, items: list[etree._Element], *, ordered: bool, start: int) -> list[str]:
        rendered: list[str] = []
        number = start
        for item in items:
            blocks = self._blocks(item)
            if not blocks:
                continue
            if ordered:
                number = _item_value(item, number)
            marker = f"{min(number, MAX_LIST_NUMBER)}. " if ordered else "- "
            number += 1
            first = blocks[0]
            if first.startswith((TASK_DONE, TASK_OPEN)):
                box = "[x] " if first.startswith(TASK_DONE) else "[ ] "
                blocks[0] = box + first[1:].lstrip()
            if self._flat:
                rendered.extend([marker + blocks[0], *blocks[1:]])
                continue
            body = blocks[0]
            for block in blocks[1:]:
                # A nested list may follow its item's text directly; anything else needs a blank line.
                separator = "\n" if _is_list(block) else "\n\n"
                body += separator + block
            rendered.append(_indent(body, " " * len(marker), first=marker))
        if self._flat or not rendered:
            return rendered
        return [self._built("\n".join(rendered))]

    def _definition_list(self, element: etree._Element) -> list[str]:
        out: list[str] = []
        for child in element:
            tag = _tag(child)
            if tag == "dt":
                term = self._finish_inline(self._inline_children(child), single_line=True)
                if term:
                    out.append(self._built(f"**{term}**"))
            elif tag == "dd":
                blocks = self._blocks(child)
                if self._flat and blocks:
                    out.extend([": " + blocks[0], *blocks[1:]])
                elif inner := "\n\n".join(blocks):
                    out.append(self._built(_indent(inner, "  ", first=": ")))
            elif tag == "div":  # <dl><div><dt/><dd/></div></dl> is valid HTML
                out.extend(self._definition_list(child))
        return out

    def _table(self, table: etree._Element) -> list[str]:
        caption = None
        for node in table.iter():
            if _tag(node) == "caption" and _nearest_table(node) is table:
                caption = self._finish_inline(self._inline_children(node), single_line=True)
        header_rows = 0
        rows: list[list[etree._Element]] = []
        for row, cells in table_rows(table):
            parent = row.getparent()
            in_head = parent is not None and _tag(parent) == "thead"
            if header_rows == len(rows) and (in_head or all(_tag(cell) == "th" for cell in cells)):
                header_rows += 1
            rows.append(cells)
        if not rows:
            return []
        if is_layout_table(rows):
            return [block for row in rows for cell in row for block in self._blocks(cell)]
        width = max(sum(_colspan(cell) for cell in row) for row in rows)
        padded = width <= MAX_TABLE_COLUMNS
        grid: list[list[str]] = []
        for cells in rows:
            texts: list[str] = []
            for cell in cells:
                texts.append(self._cell_text(cell))
                if padded:
                    texts.extend([""] * (_colspan(cell) - 1))
            if padded:
                texts.extend([""] * (width - len(texts)))
            else:  # trailing empty cells are padding too (the reader view fills rows to its width)
                while texts and not texts[-1]:
                    texts.pop()
            grid.append(texts)
        if header_rows > 1:  # GFM has a single header row: fold the others into it
            merged = [
                " ".join(filter(None, column)) for column in zip_longest(*grid[:header_rows], fillvalue="")
            ]
            grid = [merged, *grid[header_rows:]]
        head, body = (grid[0], grid[1:]) if header_rows else ([""] * max(map(len, grid)), grid)
        head = head or [""]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
        lines.extend(self._built("| " + " | ".join(row) + " |") for row in body)
        out = [f"*{caption}*"] if caption else []
        out.append("\n".join(lines))
        return out

    def _cell_text(self, cell: etree._Element) -> str:
        """A cell as one line of GFM: its lines (``<br>`` in the HTML, blocks, list items) joined by
        ``<br>``, which GitHub renders as line breaks in a table; a code block's lines by spaces."""
        if len(cell) == 0 and not (cell.text or "").strip():  # the reader view's padding: many
            return ""
        lines: list[str] = []
        for block in self._blocks(cell):
            if block.startswith(("```", "~~~")):
                lines.append(block.replace("\n", " "))
            else:
                lines.extend(line.strip() for line in block.replace("\\\n", "\n").split("\n") if line.strip())
        text = "<br>".join(lines)
        return re.sub(r"(?<!\\)\|", r"\\|", text).strip()

    # -- inline --------------------------------------------------------------------------------
    def _inline_children(self, element: etree._Element) -> str:
        parts: list[str] = [escape_text(element.text)] if element.text else []
        for child in element:
            tag = _tag(child)
            if tag and tag not in SKIPPED:
                parts.append(self._inline(child))
            if child.tail:
                parts.append(escape_text(child.tail))
        return "".join(parts)

    def _inline(self, element: etree._Element) -> str:
        tag = _tag(element)
        if tag == "br":
            return _HARD_BREAK
        if tag == "img":
            return self._image(element)
        if tag == "code" or tag in ("kbd", "samp", "tt"):
            text = _SPACES.sub(" ", "".join(element.itertext()).translate(_PAGE_SEPARATORS))
            return _wrap_outside(text, code_span) if text.strip() else text
        if tag in ("pre",):
            return code_span(code_block_text(element))
        inner = self._inline_children(element)
        if tag in ("strong", "b"):
            return _wrap_outside(inner, lambda s: f"**{s}**")
        if tag in ("em", "i", "cite", "dfn"):
            return _wrap_outside(inner, lambda s: f"*{s}*")
        if tag in ("del", "s", "strike"):
            return _wrap_outside(inner, lambda s: f"~~{s}~~")
        if tag == "a":
            return self._link(element, inner)
        if tag in BLOCKS or tag in HEADINGS:  # block markup inside inline markup: keep words apart
            return f" {inner} "
        return inner

    def _link(self, element: etree._Element, inner: str) -> str:
        href = self.url(element.get("href"))
        text = inner.strip()
        if not text or href is None:
            return inner
        text = text.replace(_HARD_BREAK, " ")
        target = link_destination(href)
        return _wrap_outside(inner, lambda _s: f"[{text}]({target})")

    def _image(self, element: etree._Element) -> str:
        if not self.images:
            return ""
        src = self.url(element.get("src") or element.get("data-src"))
        if src is None:
            return ""
        alt = _SPACES.sub(" ", element.get("alt") or "").strip()
        alt = escape_text(alt)
        return f"![{alt}]({link_destination(src)})"

    def _finish_inline(self, text: str, *, single_line: bool = False) -> str:
        """Collapse whitespace, turn break placeholders into hard breaks, escape line starts."""
        text = _SPACES.sub(" ", text)
        if single_line:
            return text.replace(_HARD_BREAK, " ").strip()
        # Empty lines (runs of breaks, leading and trailing ones included) go in one pass.
        lines = (line.strip() for line in text.split(_HARD_BREAK))
        return self._built("\\\n".join(escape_line_start(line) for line in lines if line))


def numbered_items(listing: etree._Element) -> list[tuple[etree._Element, int]]:
    """The ``<li>`` children of an ordered list with the numbers the page gives them (``start``
    on the list, ``value`` on an item, else one more than the item before)."""
    start = _list_number(listing.get("start"))
    number = 1 if start is None else start
    items = []
    for item in listing:
        if item.tag == "li":
            number = _item_value(item, number)
            items.append((item, min(number, MAX_LIST_NUMBER)))
            number += 1
    return items


def _item_value(item: etree._Element, default: int) -> int:
    """An ordered item's number: its ``value`` attribute when it has a usable one. The number is
    written as is, mid-list too: CommonMark renderers renumber, but a model reads the text."""
    value = _list_number(item.get("value"))
    return default if value is None else value


def _list_number(raw: str | None) -> int | None:
    """A ``start`` or ``value`` attribute as a list number (a negative one is 0), or None when it
    is none or longer than CommonMark's nine digits."""
    if raw is None or len(raw.strip()) > 10:  # "-" and nine digits; int() of a longer one is slow
        return None
    try:
        number = max(0, int(raw))
    except ValueError:
        return None
    return number if number <= MAX_LIST_NUMBER else None


def _wrap_outside(text: str, wrap: Callable[[str], str]) -> str:
    """Apply ``wrap`` to the stripped text, keeping flanking whitespace outside the markers."""
    stripped = text.strip()
    if not stripped:
        return text
    start = text.index(stripped[0])
    return text[:start] + wrap(stripped) + text[start + len(stripped) :]


def _colspan(cell: etree._Element) -> int:
    try:
        return min(max(int(cell.get("colspan", "1")), 1), 50)
    except ValueError:
        return 1


def table_rows(table: etree._Element) -> list[tuple[etree._Element, list[etree._Element]]]:
    """The table's own rows (a nested table's stay inside their cell), each with its cells."""
    rows = []
    for row in table.iter():
        if _tag(row) == "tr" and _nearest_table(row) is table:
            cells = [cell for cell in row if _tag(cell) in ("td", "th")]
            if cells:
                rows.append((row, cells))
    return rows


def is_layout_table(rows: list[list[etree._Element]]) -> bool:
    """A table used for layout (one column, or a single row): its cells are ordinary blocks."""
    width = max((sum(_colspan(cell) for cell in row) for row in rows), default=0)
    return width == 1 or len(rows) == 1


def _nearest_table(node: etree._Element) -> etree._Element | None:
    for ancestor in node.iterancestors():
        if _tag(ancestor) == "table":
            return ancestor
    return None


def _is_list(block: str) -> bool:
    return bool(re.match(r"^(?:[-+*] |\d{1,9}[.)] )", block))


_EMPHASIS_TAGS = frozenset({"strong", "b", "em", "i", "del", "s", "u", "code"})


def merge_split_emphasis(root: etree._Element) -> etree._Element:
    """Join runs of the same emphasis that touch (``<b>Game D</b><b>ay</b>``), in place.

    Page editors leave such splits; written apart, their markdown markers meet as ``****``,
    which CommonMark reads as literal asterisks inside a split word. Runs separated by any
    text, even a space, stay apart. A rendering fix: on half A of the extraction benchmark's dev
    pages it restored one split heading (F1 A 0.9879 -> 0.9880, B unchanged at 0.968).
    """
    for element in list(root.iter(*_EMPHASIS_TAGS)):
        parent = element.getparent()
        if parent is None:  # merged into the run before it
            continue
        run: list[etree._Element] = []
        following, last = element.getnext(), element
        while following is not None and following.tag == element.tag and not last.tail:
            run.append(following)
            last, following = following, following.getnext()
        if run:
            _merge_run(element, run, parent)
    return root


def _merge_run(element: etree._Element, run: list[etree._Element], parent: etree._Element) -> None:
    """Move the content of ``run`` (``element``'s next siblings) into ``element``, in linear time:
    text is gathered and joined once, not concatenated piece by piece (a page of 600,000 touching
    ``<i>x</i>`` took minutes)."""
    pieces = [(element[-1].tail if len(element) else element.text) or ""]

    def flush() -> None:
        text = "".join(pieces)
        if len(element):
            element[-1].tail = text
        else:
            element.text = text

    for following in run:
        pieces.append(following.text or "")
        children = list(following)
        if children:
            flush()
            element.extend(children)
            pieces = [element[-1].tail or ""]
    flush()
    element.tail = run[-1].tail
    for following in run:
        parent.remove(following)


def html_to_markdown(
    root: etree._Element,
    *,
    base_url: str | None = None,
    code_languages: Mapping[str, str] | None = None,
    images: bool = True,
    budget: int | None = None,
) -> str:
    """Convert ``root`` and its descendants to markdown (``code_languages``: normalised code -> language).

    Touching runs of the same emphasis in ``root`` are joined first (:func:`merge_split_emphasis`).
    Raises :class:`RenderTooLarge` once the markdown written passes ``budget`` characters.
    """
    merge_split_emphasis(root)
    languages = code_languages or {}
    renderer = MarkdownRenderer(
        base_url=base_url,
        code_language=lambda code: languages.get(normalise_code(code)),
        images=images,
        budget=budget,
    )
    return renderer.render(root)


def normalise_code(code: str) -> str:
    """A key that survives the whitespace changes extraction makes to a code block."""
    return re.sub(r"\s+", "", code)[:2000]
