"""md-vision's document model against an independent reference parser.

The reference (the test oracle) is markdown-it-py's stock CommonMark parser with GFM tables. It
is used only here: md-vision itself parses with cmark-gfm (:mod:`md_vision.parser`). For the
bundled samples and a few hundred random documents built from every block construct (headings at
all levels, setext, lists, block quotes, fences, indented code, HTML blocks, tables, reference
definitions, images of every syntax, CRLF and lone CR), both must find the same headings (level,
text, line, nested) and the same images in the same order.

Known, deliberate differences (the generator puts a blank line where they would show):

- A line that opens a type-7 HTML block (any tag alone on its line, e.g. ``<img src=x>``) right
  after a list item's or block quote's paragraph: cmark (like commonmark.js and GitHub) ends the
  list and opens an HTML block that runs to the next blank line; markdown-it takes the line as a
  lazy continuation (markdown-it-py issue #434). ``test_type_7_html_after_a_list_item_follows_cmark``
  pins our behaviour.
- A line right after a link reference definition that cannot interrupt a paragraph (indented by
  four or more columns, or an ordered list item not numbered 1): the spec (and cmark) parse
  definitions out of a paragraph, so the line continues that paragraph; markdown-it parses
  definitions as blocks of their own and starts an indented code block or a list there.
- ``---`` or ``===`` right after link reference definitions: cmark-gfm (spec 0.29) keeps it as
  paragraph text; markdown-it (spec 0.31) makes ``---`` a thematic break.
- A table directly under a paragraph: cmark-gfm takes the paragraph's last line as the header
  row and drops link reference definitions that start that paragraph (a cmark-gfm bug; GitHub
  shows the same). markdown-it keeps them.
- A tab-indented line right after a nested block quote's paragraph: both take it as a lazy
  continuation, but markdown-it then ends the inner quote early and can find a setext heading
  two lines later that cmark (and the spec) keep as paragraph text.
"""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from md_vision.document import parse_document
from tests.md_vision.conftest import SAMPLES

_SPACES = re.compile(r"\s+")


def _oracle_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")
    # Keep destinations as written (no percent-encoding, no dropping of javascript:/file:),
    # which is what md-vision reports; parsing itself is untouched.
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    return md


class _Imgs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "img":
            self.sources.append((dict(attrs).get("src") or "").strip())

    handle_startendtag = handle_starttag


def _html_sources(fragment: str) -> list[str]:
    parser = _Imgs()
    parser.feed(fragment)
    parser.close()
    return parser.sources


def oracle(text: str) -> tuple[list[tuple], list[str]]:
    """Headings (level, text, line, nested) and image targets in order, by markdown-it."""
    frontmatter = parse_document(text).frontmatter  # frontmatter detection is not under test here
    if frontmatter is not None:
        lines = re.split(r"(?<=\n)|(?<=\r)(?!\n)", text)
        text = "\n" * frontmatter.end_line + "".join(lines[frontmatter.end_line :])
    tokens = _oracle_parser().parse(text)
    headings, images = [], []
    for number, token in enumerate(tokens):
        if token.type == "heading_open":
            content = tokens[number + 1].content
            headings.append(
                (int(token.tag[1]), _SPACES.sub(" ", content).strip(), token.map[0] + 1, token.level > 0)
            )
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "image":
                    images.append(str(child.attrs["src"]))
                elif child.type == "html_inline" and child.content[:4].lower() == "<img":
                    images.extend(_html_sources(child.content))
        elif token.type == "html_block":
            images.extend(_html_sources(token.content))
    return headings, images


def ours(text: str) -> tuple[list[tuple], list[str]]:
    document = parse_document(text)
    return (
        [(h.level, h.text, h.line, h.nested) for h in document.headings],
        [image.target for image in document.images],
    )


PIECES = [
    "# Title\n",
    "## Section two ##\n",
    "### Three *emph* `code`\n",
    "#### Four\n",
    "##### Five \\#\n",
    "###### Six\n",
    "   ## Indented heading\n",
    "#\n",
    "#no space is text\n",
    "Setext one\n===\n",
    "Setext two\n---\n",
    "A paragraph line with ![inline](img/a.png) in it.\n",
    'Second line ![titled](img/b.png "Title") and ![ref][r1] and ![r2].\n',
    "Collapsed ![r1][] and escaped \\![no](x.png) and `![code](x.png)`.\n",
    "[![linked](img/linked.png)](https://example.com)\n",
    "![outer ![inner](in.png) alt](out.png)\n",
    "![multi\nline alt](img/multi.png)\n",
    "![dest on next line](\n  img/next.png\n)\n",
    'Inline <img src="img/inline.png" alt="i"> html.\n',
    "\n<img src='img/alone.png'>\n",
    '\n<div>\n  <img src="img/block.png">\n  <!-- <img src="img/comment.png"> -->\n</div>\n',
    "<!-- a comment with ![md](x.png) -->\n",
    "\n",
    "\n",
    "\n",
    "- item one\n",
    "- item ![li](img/li.png)\n",
    "  - nested ![nested](img/nested.png)\n",
    "  ## Heading in list\n",
    "1. ordered\n",
    "2) other ![ord](img/ord.png)\n",
    "> quote ![q](img/q.png)\n",
    "> ## Quoted heading\n",
    "> > deeper\n",
    "lazy continuation\n",
    "```\n",
    "~~~ info\n",
    "# fenced, not a heading\n",
    "    indented code ![not](x.png)\n",
    "| a | b |\n|---|---|\n| ![cell](img/cell.png) | x |\n",
    "[r1]: img/ref1.png\n",
    '[r2]: img/ref2.png "Ref two"\n',
    "***\n",
    "---\n",
    "Hard break\\\nafter ![hb](img/hb.png)\n",
    "\t- tab item\n",
    "Text with &amp; entity ![e&amp;](img/e&amp;.png)\n",
]


def _known_difference(before: str, after: str) -> bool:
    """Whether two pieces written one after the other hit a difference listed above."""
    indented = after.startswith(("    ", "\t"))
    return (
        (before.startswith("[r") and (indented or after.startswith(("---", "===", "2)"))))
        or after.startswith("| a |")
        or (before.startswith(">") and indented)
    )


def random_document(rng: random.Random) -> str:
    pieces = [rng.choice(PIECES) for _ in range(rng.randint(3, 40))]
    for number in range(len(pieces) - 1, 0, -1):
        if _known_difference(pieces[number - 1], pieces[number]):
            pieces.insert(number, "\n")
    text = "".join(pieces)
    ending = rng.random()
    if ending < 0.2:
        text = text.replace("\n", "\r\n")
    elif ending < 0.25:
        text = text.replace("\n", "\r")
    return text


def _samples() -> list[str]:
    return [
        path.read_text(encoding="utf-8")
        for path in sorted(SAMPLES.rglob("*"))
        if path.suffix.lower() in (".md", ".markdown")
    ]


@pytest.mark.parametrize("number", range(3))
def test_samples_agree_with_the_reference(number: int) -> None:
    texts = _samples()
    assert len(texts) == 3
    assert ours(texts[number]) == oracle(texts[number])


def test_random_documents_agree_with_the_reference() -> None:
    rng = random.Random(20261129)
    for _ in range(400):
        text = random_document(rng)
        assert ours(text) == oracle(text), text


def test_type_7_html_after_a_list_item_follows_cmark() -> None:
    text = '## Opts\n\n- a\n<img src="x.png">\n## Next\n'
    headings, images = ours(text)
    assert headings == [(2, "Opts", 1, False)] and images == ["x.png"]  # as GitHub renders it
    assert oracle(text)[0] == [(2, "Opts", 1, False), (2, "Next", 5, False)]
