"""The extractors the benchmark compares, each ``(html, url) -> text``.

Markdown outputs are scored on the text they render to (:func:`markdown_to_text`), so markup
characters and link targets never count as words. Heavy libraries load on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Extractor:
    name: str
    label: str
    extract: Callable[[str, str], str]
    markdown: bool  # the output is markdown and is rendered to text before scoring


def markdown_to_text(markdown: str) -> str:
    """The text a markdown document renders to: CommonMark + GFM tables and strikethrough, tags removed."""
    from lxml import html
    from markdown_it import MarkdownIt

    rendered = _renderer(MarkdownIt).render(markdown)
    if not rendered.strip():
        return ""
    root = html.fragment_fromstring(rendered, create_parent="div")
    for element in root.iter(
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "tr", "td", "th", "blockquote", "br"
    ):
        element.tail = "\n" + (element.tail or "")  # blocks stay apart as words
    return str(root.text_content())


_RENDERERS: dict[type, Any] = {}


def _renderer(markdown_it: type) -> Any:
    if markdown_it not in _RENDERERS:
        _RENDERERS[markdown_it] = markdown_it("commonmark").enable(["table", "strikethrough"])
    return _RENDERERS[markdown_it]


def _markfetch_body(page_html: str, url: str) -> str:
    from markfetch.extract import ExtractionFailed, extract_article

    try:
        return extract_article(page_html, url).body
    except ExtractionFailed:
        return ""


def _markfetch_document(page_html: str, url: str) -> str:
    from markfetch.extract import ExtractionFailed, extract_article

    try:
        return extract_article(page_html, url).markdown
    except ExtractionFailed:
        return ""


def _trafilatura(output_format: str) -> Callable[[str, str], str]:
    def run(page_html: str, url: str) -> str:
        import trafilatura

        # As the benchmark's own trafilatura runner calls it, plus the output format.
        return trafilatura.extract(page_html, include_comments=False, output_format=output_format) or ""

    return run


def _readability_markdownify(page_html: str, url: str) -> str:
    """The approach of the official Python MCP fetch server: Readability, then markdownify."""
    from markdownify import markdownify
    from readability import Document

    try:
        content = Document(page_html, url=url).summary(html_partial=True)
    except Exception:  # readability-lxml raises bare Unparseable/ValueError on odd pages
        return ""
    return markdownify(content, heading_style="ATX")


EXTRACTORS: dict[str, Extractor] = {
    extractor.name: extractor
    for extractor in (
        Extractor("markfetch", "markfetch markdown (article body)", _markfetch_body, markdown=True),
        Extractor(
            "markfetch-document",
            "markfetch markdown (as returned, with # title)",
            _markfetch_document,
            markdown=True,
        ),
        Extractor("trafilatura-text", "trafilatura text", _trafilatura("txt"), markdown=False),
        Extractor("trafilatura-markdown", "trafilatura markdown", _trafilatura("markdown"), markdown=True),
        Extractor(
            "readability-markdownify",
            "readability-lxml + markdownify",
            _readability_markdownify,
            markdown=True,
        ),
    )
}
DEFAULT_EXTRACTORS = (
    "markfetch",
    "markfetch-document",
    "trafilatura-text",
    "trafilatura-markdown",
    "readability-markdownify",
)
TIME_BASELINE = "trafilatura-markdown"
