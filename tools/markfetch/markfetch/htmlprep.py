"""Prepare a parsed page for extraction: what a browser would not show goes, what it shows is kept.

All functions mutate the lxml tree they are given and do no I/O.

- Scripts and styles go first (JSON-LD data stays): no extractor reads them, and every later
  step, trafilatura's included, then walks a smaller tree.
- Hidden elements (``hidden``, ``display:none``, ``visibility:hidden``, ``aria-hidden``) are
  removed, as a reader view does: pages often carry a hidden copy of the article for crawlers.
  A page that hides much of its text is holding content back for a click instead (tabs,
  accordions, "read more"): there only hidden copies go (see :func:`remove_hidden`).
- Heading permalinks (Sphinx ``¶``, MDN-style self-links, ``#``/``§``/``🔗`` anchors) are removed
  or unwrapped, so headings read as text.
- Code blocks are normalised to ``<pre><code>text</code></pre>`` (highlighting spans and line
  numbers dropped, ``<br>`` as newlines) and their language recorded, because the extractor keeps
  the text of code but not its attributes.
- Task-list checkboxes become ☐/☑ markers that the markdown renderer turns into ``[ ]``/``[x]``.
- ``<header>`` regions (masthead, byline, share bar) go unless they wrap the article's prose.
- Teaser cards go: list items whose heading links to another page, with at most a subline beside
  it ("latest stories" grids; TEASER_MAX_OTHER_CHARS). On the article-extraction dev pages, 351
  such items on 37 pages held text of the article once (7 items, one page, which the reader view
  misses anyway); lists in articles carry no headings.
- What the reader view would drop of the page's structure is carried across it
  (:mod:`markfetch.preserved`: list numbering, rules, figure captions).
- Dates marked up as schema.org properties (``itemprop="datePublished"``) go: metadata.
- ``<small>`` print goes: HTML's side comments (dates, bylines, disclaimers, copyright).
- Page furniture named by its class or id (newsletter, promo, share, social, outbrain ...) goes,
  unless the element is a misnamed container of the article.

Why one module: the passes run in an order that matters (scripts first, so every later pass walks
a smaller tree; heading permalinks before teaser cards, which read a heading's link; code blocks
before figures, so a highlighter's code table in a figure is read as code) and share one
measure of the page (:func:`visible_text_length`, :func:`text_chars`) and one way to remove a
subtree without losing its tail text (``_drop``); :func:`prepare` shows the whole sequence at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from lxml import etree, html

from markfetch import nesting
from markfetch.markdown import (
    TASK_DONE,
    TASK_OPEN,
    code_block_text,
    language_hint,
    language_name,
    normalise_code,
)
from markfetch.preserved import keep_figure_captions, list_numbers, mark_rules
from markfetch.shingles import shingles

_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)",
    # One quantifier per run of spaces: two in a row split a long run every way (quadratic).
    # As CSS reads a declaration: keywords in ASCII case only (a dotless "ı" is no "i"), and only
    # ASCII whitespace around them (a no-break space makes "display:\xa0none" invalid, so shown).
    re.IGNORECASE | re.ASCII,
)
_PERMALINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "⚓", "∞", "link", "permalink", "anchor", "¶ link"})
_PERMALINK_CLASS = re.compile(
    r"headerlink|anchor|permalink|heading-link|hash-link|header-link|direct-link", re.I
)
_NEVER_REMOVED = frozenset({"html", "head", "body"})
_LINE_NUMBERS = frozenset(
    {"linenos", "linenodiv", "line-numbers-rows", "gutter", "lineno", "line-number", "ln-num"}
)
# Every line-number class holds one of these strings: XPath picks the few elements worth testing
# instead of handing Python every element with a class.
_LINE_NUMBER_CANDIDATES = etree.XPath(
    "//*[@class[contains(., 'lin') or contains(., 'gutter') or contains(., 'ln-num')]]"
)
_LETTER = re.compile(r"[^\W\d_]")
_VOID_TEXT_TAGS = ("script", "style", "noscript", "template")


@dataclass
class PreparedPage:
    """What the preparation learnt that the extracted tree no longer carries."""

    code_languages: dict[str, str] = field(default_factory=dict)  # normalise_code(text) -> language
    # list_key(first item) -> each item's number, for ordered lists that do not count 1, 2, 3
    # from 1 (``start``, ``value``): the reader view drops both attributes.
    list_numbers: dict[str, tuple[int, ...]] = field(default_factory=dict)


def parse_html(text: str) -> html.HtmlElement | None:
    """Parse a page; None when there is nothing to parse. See :func:`parse_page`."""
    return parse_page(text)[0]


def parse_page(text: str) -> tuple[html.HtmlElement | None, bool]:
    """Parse a page: its tree (None when there is nothing to parse), and whether the page nests
    deeper than even the huge-tree parse reads (:mod:`markfetch.nesting`), so that its end is cut.

    C0 control characters other than tab and line breaks go first, raw or as character
    references (a form feed becomes a line break): lxml parses them into the tree but refuses
    them in any text set later, so a form feed in a ``<pre>`` (common in C and Python sources)
    ended the extraction with an error.

    XML declarations that open the page go next (:func:`_without_xml_declarations`)."""
    text = _without_xml_declarations(_without_controls(text))
    if not text.strip():
        return None, False
    try:
        tree, cut = _parse(text, huge=False)
        if cut:  # nested past libxml2's default depth: the rest of the page was dropped
            tree, cut = _parse(text, huge=True)
            nesting.flatten(tree)
        return tree, cut
    except (etree.ParserError, ValueError):
        return None, False


def _parse(text: str, *, huge: bool) -> tuple[html.HtmlElement, bool]:
    # A parser per page: its error log says whether this page hit a limit (one shared between
    # the server's extraction threads would mix their logs); making one costs about 2 µs.
    # Comments go at parse time: removed later, an extractor would lose the text that follows them.
    parser = html.HTMLParser(
        collect_ids=False, default_doctype=False, remove_comments=True, remove_pis=True, huge_tree=huge
    )
    tree = html.document_fromstring(text, parser=parser)
    return tree, any(error.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT for error in parser.error_log)


def _without_xml_declarations(text: str) -> str:
    """``text`` without the XML declarations (``<?xml ... ?>``) and whitespace that open it.

    lxml refuses to parse a str that starts with a declaration naming an encoding ("Unicode
    strings with encoding declaration are not supported"), and the page then failed as empty:
    XHTML pages start so, and some start with two (one from a template, one from the page; or
    one hidden behind a control character, which goes first). A browser reads each as a bogus
    comment up to the first ``>``, so one is removed up to there (to the page's end when it has
    none), as often as one opens the page. Declarations further in are left to the parser, which
    drops them as processing instructions; a page opening with none is not copied."""
    opening = _LEADING_DECLARATIONS.match(text)
    return text[opening.end() :] if opening else text


# The whole run in one match: whitespace, a declaration up to its first ">", and again. lxml's own
# test is as narrow (case-sensitive, any "<?xml..." naming an encoding: a stylesheet one too).
_LEADING_DECLARATIONS = re.compile(r"(?:\s*<\?xml[^>]*(?:>|\Z))+")


# C0 controls but tab, LF and CR: a form feed becomes a line break, the rest go.
_CONTROL_CHARS = "".join(map(chr, [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)]))
_CONTROL_TABLE = str.maketrans({char: ("\n" if char == "\x0c" else None) for char in _CONTROL_CHARS})
# Numeric references to them (decimal or hex); the literal "&#" lets the search skip ahead.
_CONTROL_REFERENCE = re.compile(
    r"&#(?:0*(?:[0-8]|1[1-2]|1[4-9]|2[0-9]|3[01])|[xX]0*(?:[0-8]|[bBcCeEfF]|1[0-9a-fA-F]))(?![0-9a-fA-F]);?"
)


def _without_controls(text: str) -> str:
    """``text`` without C0 controls (see :func:`parse_html`); a page without any is not copied
    (one ``in`` per character is about a tenth of a regular expression over a 200 KB page)."""
    if any(char in text for char in _CONTROL_CHARS):
        text = text.translate(_CONTROL_TABLE)
    if "&#" in text:
        text = _CONTROL_REFERENCE.sub(_reference_replacement, text)
    return text


def _reference_replacement(match: re.Match[str]) -> str:
    digits = match.group()[2:].rstrip(";")
    code = int(digits[1:], 16) if digits[:1] in ("x", "X") else int(digits)
    return "\n" if code == 0x0C else ""  # a form feed breaks the page: a line break


def _ascii_lower(value: str | None) -> str:
    """An attribute value as HTML compares its keywords: ASCII letters folded, nothing else."""
    return (value or "").translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _classes(element: etree._Element) -> str:
    return element.get("class") or ""


def _drop(element: etree._Element) -> None:
    """Remove ``element`` and its subtree but keep its tail text in place."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    previous = element.getprevious()
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


# When the elements hidden by their attributes hold more than this share of the page's text, the
# page is holding content back for a click (product tabs, FAQ accordions, "read more" text, a
# landing page's sections revealed by script), not hiding furniture; then only hidden copies go.
# Chosen on the web-content-extraction benchmark's dev part (F1 0.7685 -> 0.7742; 0.1-0.3 all
# gave 0.7735-0.7748) and checked, unchanged, on WCXB's dev set (its 1,358 pages: 0.8107 ->
# 0.8139; first measured on all 1,497 files of dev/, 139 of which are test pages filed twice:
# 0.8141 -> 0.8175) and its held-out test set (0.863 -> 0.865); the web-content-extraction
# benchmark's validation part moved 0.777 -> 0.776.
HIDDEN_CONTENT_SHARE = 0.25
# A hidden element is a copy when at least this share of its 4-word shingles is shown elsewhere
# on the page (a schema.org copy of the article for crawlers, a carousel's cloned slides).
HIDDEN_COPY_SHARE = 0.5


def remove_hidden(tree: etree._Element) -> int:
    """Remove what a browser would not render; returns how many subtrees went.

    ``<noscript>`` counts as hidden: a browser running scripts never shows it, and on a
    client-rendered page it holds only "enable JavaScript", which is no article.

    An element hidden by its attributes that holds more than half of the page's text is not a
    hidden copy but the page itself, hidden for a moment: behind an open dialog (which sets
    ``aria-hidden`` on the rest of the page) or until a script reveals it. It stays.

    When the hidden elements together hold more than HIDDEN_CONTENT_SHARE of the page's text, the
    page keeps content for a click, and a hidden element stays unless it is a copy of text the
    page shows (:func:`_hidden_copies`); ``<noscript>`` and ``<template>`` still go. Two limits,
    kept on purpose: hidden copies count towards that share (so a large crawler's copy lets a
    hidden modal stay beside it, which the reader view then usually leaves out; counting only the
    rest moved the dev parts by -0.0001 to -0.0004), and only the outermost hidden elements are
    compared, so a copy inside a hidden element that stays (a cloned slide in a hidden tab
    panel) stays with it.
    """
    doomed = []
    chars: dict[etree._Element, int] = {}  # text length of each element hidden by its attributes
    page_chars: int | None = None
    for element in _HIDDEN_CANDIDATES(tree):
        if element.tag in _NEVER_REMOVED:
            continue
        if element.tag in ("noscript", "template"):
            doomed.append(element)
        elif (
            element.get("hidden") is not None
            or (element.get("aria-hidden") or "").strip().lower() == "true"
            or _HIDDEN_STYLE.search(element.get("style") or "")
        ):
            if page_chars is None:
                page_chars = visible_text_length(tree)
            chars[element] = visible_text_length(element)
            if chars[element] * 2 <= page_chars:
                doomed.append(element)
    outermost = _outermost(doomed)
    hidden = [e for e in outermost if e in chars]
    if page_chars and sum(chars[e] for e in hidden) > HIDDEN_CONTENT_SHARE * page_chars:
        copies = set(_hidden_copies(tree, hidden))
        outermost = _outermost([e for e in doomed if e not in chars or e in copies])
    for element in outermost:
        _drop(element)
    return len(outermost)


def _outermost(elements: list[etree._Element]) -> list[etree._Element]:
    """Those of ``elements`` not inside another of them (the others go with them), in order."""
    marked = set(elements)
    return [e for e in elements if not any(a in marked for a in e.iterancestors())]


def _hidden_copies(tree: etree._Element, hidden: list[etree._Element]) -> list[etree._Element]:
    """The elements of ``hidden`` (none inside another) whose text the rest of the page shows."""
    shown = shingles(" ".join(_VISIBLE_TEXT(_text_root(tree))))
    own = [shingles(" ".join(_VISIBLE_TEXT(element))) for element in hidden]
    for counts in own:
        shown.subtract(counts)
    shown = +shown  # the page's text outside every hidden element
    return [
        element
        for element, counts in zip(hidden, own, strict=True)
        if counts and sum((counts & shown).values()) >= HIDDEN_COPY_SHARE * sum(counts.values())
    ]


# Only these can be hidden, so the rest of the page is never visited (document order is kept).
# Testing the style's words in XPath as well made the query twice as slow: it ran on every element.
_HIDDEN_CANDIDATES = etree.XPath("//*[@hidden or @aria-hidden or @style] | //noscript | //template")


def clean_heading_anchors(tree: html.HtmlElement) -> None:
    """Drop permalink anchors (¶, #, 🔗 ...) and unwrap headings' links to themselves."""
    for anchor in list(tree.iter("a")):
        text = anchor.text_content().strip().lower()
        same_page = (anchor.get("href") or "").startswith("#")
        if text not in _PERMALINK_TEXT and not same_page:
            continue  # most links: walking their ancestors cost a tenth of the preparation
        in_heading = any(a.tag in ("h1", "h2", "h3", "h4", "h5", "h6") for a in anchor.iterancestors())
        if text in _PERMALINK_TEXT and (
            in_heading
            or "headerlink" in _classes(anchor)
            or text == "¶"
            or _PERMALINK_CLASS.search(_classes(anchor))
        ):
            if not text and anchor.find(".//img") is not None:
                continue  # an image link, not a permalink
            _drop(anchor)
        elif in_heading and same_page:
            anchor.drop_tag()


def heading_text(heading: etree._Element) -> str:
    """A heading's text as a reader sees it: without its permalink anchors (¶, #, 🔗 ...), whitespace
    collapsed. For reading the page's headline before :func:`clean_heading_anchors` runs."""
    parts: list[str] = []

    def walk(element: etree._Element) -> None:
        if element.tag == "a" and "".join(element.itertext()).strip().lower() in _PERMALINK_TEXT:
            return
        if element.text:
            parts.append(element.text)
        for child in element:
            if isinstance(child.tag, str):
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(heading)
    return " ".join("".join(parts).split())


def normalise_code_blocks(tree: etree._Element) -> dict[str, str]:
    """Rewrite each ``<pre>`` as ``<pre><code>plain text</code></pre>``; return code -> language."""
    languages: dict[str, str] = {}
    for element in _LINE_NUMBER_CANDIDATES(tree):
        names = _LINE_NUMBERS.intersection(_classes(element).split())
        if names and (names != {"gutter"} or not _LETTER.search("".join(element.itertext()))):
            # Line-number gutters are not code; a pygments "highlighttable" keeps its code cell.
            # "gutter" is also a grid framework's name for a spaced layout section, which holds a
            # page's content: a gutter of that name goes only when it holds no words.
            _drop(element)
    for table in list(tree.xpath("//table[.//pre]")):
        pres = table.findall(".//pre")
        parent = table.getparent()
        if parent is not None and (
            "highlighttable" in _classes(table) or (len(pres) == 1 and len(table.findall(".//td")) <= 2)
        ):
            code_pre = pres[-1]
            # Before the wrapper that names it is gone.
            language = language_hint(code_pre) or _highlight_figure_language(parent)
            if language:
                code_pre.set("class", f"language-{language}")
            code_pre.tail = table.tail
            parent.replace(table, code_pre)
    for pre in list(tree.iter("pre")):
        language = language_hint(pre)
        text = code_block_text(pre)
        for child in list(pre):
            pre.remove(child)
        pre.text = None
        code = etree.SubElement(pre, "code")
        code.text = text
        if language:
            code.set("class", f"language-{language}")
            if text.strip():
                languages[normalise_code(text)] = language
    return languages


def _highlight_figure_language(element: etree._Element) -> str | None:
    """The language Hexo names on the figure around its code table: ``<figure class="highlight
    python">`` (a bare second class, which ``language_hint`` does not take for a language)."""
    names = _classes(element).split()
    if element.tag != "figure" or len(names) != 2 or names[0] != "highlight":
        return None
    return language_name(names[1])


def mark_task_items(tree: etree._Element) -> None:
    """Turn list-item checkboxes into ☐/☑ text markers (the extractor drops form inputs)."""
    boxes = [
        box
        for box in tree.iter("input")
        if _ascii_lower(box.get("type")) == "checkbox" and next(box.iterancestors("li"), None) is not None
    ]
    for box in boxes:
        marker = (TASK_DONE if box.get("checked") is not None else TASK_OPEN) + " "
        box.tail = marker + (box.tail or "").lstrip()
        _drop(box)


def keep_footnote_asides(tree: etree._Element) -> None:
    """Footnotes in ``<aside>`` are content; the extractor removes every aside as boilerplate."""
    for aside in tree.iter("aside"):
        role = aside.get("role") or ""
        if "footnote" in _classes(aside) or (role.startswith("doc-") and "note" in role):
            aside.tag = "section"


def drop_headers(tree: etree._Element) -> None:
    """Remove ``<header>`` regions: masthead, headline, standfirst, byline and share bar.

    The reader view shows the title separately; the rest is not the article. A header holding
    most of the page's text, or paragraphs of prose (a standfirst is one), is a misused tag
    wrapped around the article, and stays.
    """
    headers = [h for h in tree.iter("header") if not any(a.tag == "header" for a in h.iterancestors())]
    if not headers:
        return
    page = visible_text_length(tree)
    for header in headers:
        if header.getparent() is not None and not _holds_article(header, page, share=0.5):
            _drop(header)


# An element with this many paragraphs of at least this many characters holds article text.
HEADER_PROSE_CHARS = 150
HEADER_MAX_PROSE = 2


def _holds_article(element: etree._Element, page_chars: int, *, share: float) -> bool:
    """Whether an element that looks like boilerplate by its tag or name is in fact a container
    of the article: it holds ``share`` of the page's text, or paragraphs of prose."""
    if text_chars(element) >= share * page_chars:
        return True
    prose = sum(1 for p in element.iter("p") if visible_text_length(p) >= HEADER_PROSE_CHARS)
    return prose >= HEADER_MAX_PROSE


def text_chars(element: etree._Element) -> int:
    """Characters of an element's text, whitespace runs counted once. Unlike visible_text_length it
    counts script text too: it serves extracted blocks and regions of a page whose scripts are gone."""
    return len(" ".join("".join(element.itertext()).split()))


def drop_teaser_cards(tree: etree._Element) -> None:
    """Remove list items built as teaser cards: a linked heading (and its subline) pointing to
    another page. Story lists ("latest", "more from", "you may like") are marked up this way; a
    list that is part of an article has no headings inside its items."""
    # A page has few headings, and testing their ancestors is cheaper than the XPath
    # ``//li//*[self::h2 ...]``, which visits everything inside every list item.
    in_items = [h for h in tree.iter(*_HEADINGS) if next(h.iterancestors("li"), None) is not None]
    for heading in in_items:
        # A link to another page; a same-page anchor (a permalink) does not make a teaser.
        if heading.getparent() is None or not (
            heading.xpath(_OFF_PAGE_LINK_INSIDE) or heading.xpath(_OFF_PAGE_LINK_AROUND)
        ):
            continue
        item = next(a for a in heading.iterancestors() if a.tag == "li")
        parent = item.getparent()
        if parent is None or text_chars(item) - text_chars(heading) > TEASER_MAX_OTHER_CHARS:
            continue
        _drop(item)
        if parent.tag in ("ul", "ol") and parent.find(".//li") is None:
            _drop_emptied_list(parent)


# A teaser is a headline and a subline (a date, a byline); an item with more text of its own than
# this beside its linked heading is an entry of the page's own content (a recipe in a roundup, a
# product in a collection, a section of a documentation index). Chosen on the dev parts only
# (`docab webextract --split dev`): on the web-content-extraction pages, removing every such item
# had cost F1 0.7686 -> 0.7622 (recall 0.750 -> 0.742); with this bound 0.7684 (150: 0.7677, 300:
# 0.7661); on the article-extraction pages every bound gives the same 0.9859.
TEASER_MAX_OTHER_CHARS = 60
_OFF_PAGE_LINK_INSIDE = ".//a[@href and not(starts-with(normalize-space(@href), '#'))]"
_OFF_PAGE_LINK_AROUND = "ancestor::a[@href and not(starts-with(normalize-space(@href), '#'))]"
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _drop_emptied_list(listing: etree._Element) -> None:
    """Remove a list left without items, and the heading right before it that labelled it
    ("More:", "Latest stories"), which would otherwise stand alone in the article. On half A of the
    extraction benchmark's dev pages it removed one such label (F1 A 0.9872 -> 0.9873, B
    unchanged at 0.9679)."""
    label = listing.getprevious()
    if listing.getparent() is None:
        return
    _drop(listing)
    if label is not None and label.tag in _HEADINGS and not (label.tail or "").strip():
        _drop(label)


# Class and id words that name page furniture rather than the article: sign-up boxes, promotion
# and recommendation widgets, share bars. Chosen because on the article-extraction dev pages the
# elements they name held no article text in either half (related and paywall do, and are absent).
# "cta" (a call to action: "join", "support us") removed only such a box on half A (F1 A
# 0.9846 -> 0.9849, B unchanged at 0.9675). "print" names what is shown only on paper (print
# header and footer: reprint notices, the page's URL) or print buttons: on half A it removed only
# such notices (F1 A 0.9861 -> 0.9870, B unchanged at 0.9676).
FURNITURE_WORDS = frozenset(
    {
        "newsletter",
        "promo",
        "promos",
        "outbrain",
        "taboola",
        "subscribe",
        "subscription",
        "signup",
        "sponsored",
        "recommended",
        "recirc",
        "print",
        "cta",
        "share",
        "social",
    }
)


def _role_classes(element: etree._Element) -> str:
    """The element's classes less utility classes under a variant prefix (Tailwind's
    ``print:break-inside-avoid``, ``md:hidden``): they style the element in a case (printing, a
    wide screen), and say nothing of what it is."""
    return " ".join(name for name in _classes(element).split() if ":" not in name)


_CAMEL = re.compile(r"([a-z])([A-Z])")
_NAME_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def _name_words(element: etree._Element) -> set[str]:
    names = f"{_role_classes(element)} {element.get('id') or ''}"
    return {w.lower() for w in _NAME_SPLIT.split(_CAMEL.sub(r"\1 \2", names)) if w}


def drop_furniture(tree: etree._Element) -> None:
    """Remove elements whose class or id names a sign-up box, promotion, recommendation widget or
    share bar. An element holding a third of the page's text, or paragraphs of prose, is a
    container misnamed (``<div class="article social-enabled">``) and stays."""
    candidates = [
        element
        for element in tree.xpath("//*[@class or @id]")
        if element.tag not in _NEVER_REMOVED
        and _FURNITURE_HINT.search(f"{element.get('class') or ''} {element.get('id') or ''}".lower())
        and _name_words(element) & FURNITURE_WORDS
    ]
    if not candidates:
        return
    chosen = set(candidates)
    page = visible_text_length(tree)
    for element in candidates:
        if any(a in chosen for a in element.iterancestors()):
            continue  # goes with its ancestor, or stays with it
        if _holds_article(element, page, share=1 / 3):
            chosen.discard(element)
        else:
            _drop(element)


# Matched against the lowered names: a case-blind pattern of alternatives ran six times slower,
# and this test meets every element with a class or id.
_FURNITURE_HINT = re.compile("|".join(sorted(FURNITURE_WORDS)))


_DATE_PROPERTIES = ("datePublished", "dateModified", "dateCreated")


def drop_microdata_dates(tree: etree._Element) -> None:
    """Remove the dates a page marks up as schema.org properties (``itemprop="datePublished"``):
    they are the article's metadata, shown beside it, not its text. An element holding
    paragraphs is a container misusing the property, and stays.

    On the extraction benchmark's dev pages it removed one dateline on half A (F1 A 0.9870 ->
    0.9872, B 0.9676 -> 0.9679).
    """
    for element in list(tree.xpath("//*[@itemprop]")):
        if element.get("itemprop").strip() in _DATE_PROPERTIES and element.find(".//p") is None:
            _drop(element)


def drop_small_print(tree: etree._Element) -> None:
    """Remove standalone ``<small>`` elements: HTML defines them as side comments (small print,
    disclaimers, legal notices, attribution), which a reader view does not show as the article.
    A ``<small>`` with text on both sides is a phrase of its sentence and stays.

    On the extraction benchmark's dev pages no ``<small>`` text was part of an article on half A;
    the rule removed a date-and-byline line there (F1 A 0.9849 -> 0.9861, B 0.9675 -> 0.9676).
    """
    for element in list(tree.iter("small")):
        if not _inside_sentence(element):
            _drop(element)


def _inside_sentence(element: etree._Element) -> bool:
    """Text runs on both sides of the element: it is a phrase of a sentence (a unit, a note
    mark), not a notice that opens or closes a block."""
    previous, parent = element.getprevious(), element.getparent()
    before = previous.tail if previous is not None else (parent.text if parent is not None else None)
    return bool((before or "").strip() and (element.tail or "").strip())


def drop_scripts(tree: etree._Element) -> None:
    """Remove scripts and styles, which no extractor reads, so that every later step walks a
    smaller tree. JSON-LD data stays: trafilatura's last-resort extractor reads ``articleBody``
    from it."""
    for element in _SCRIPTS(tree):
        _drop(element)


_SCRIPTS = etree.XPath(
    "//script[not(translate(normalize-space(@type), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', "
    "'abcdefghijklmnopqrstuvwxyz') = 'application/ld+json')] | //style"
)


# Block elements that a data table's cell may hold; a pipe-table cell is one line of inline text.
_CELL_BLOCKS = frozenset(
    {
        "p", "div", "ul", "ol", "dl", "li", "dt", "dd", "blockquote", "section", "article", "figure",
        "figcaption", "address", "center", "details", "summary", "hr", "menu",
    }
)  # fmt: skip
_CELL_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_CellPiece = str | etree._Element | None  # text, an inline element, or a line break


def inline_table_cells(tree: etree._Element) -> None:
    """Rewrite the block content of data-table cells as one paragraph of inline text per line.

    A GFM table cell holds one line of inline text, and the extractor drops lists inside cells
    outright. So in a data table (two rows or more, two columns or more, no table nested in it)
    a cell's paragraphs, list items, other blocks and ``<br>`` lines become flat paragraphs of
    inline text, list items marked ``•`` (``1.``, ``2.`` ... in ordered lists): every word stays,
    and the markdown renderer joins them with ``<br>`` in the cell (GitHub renders ``<br>`` in
    tables as a line break; see ``MarkdownRenderer._cell_text``).
    A cell holding a heading is a layout cell (an article laid out in a table) and is left whole,
    as are the cells of one-row or one-column tables, which are rendered as ordinary blocks.
    """
    from markfetch.markdown import is_layout_table, table_rows

    for table in list(tree.iter("table")):
        if table.find(".//table") is not None:
            continue
        rows = [cells for _row, cells in table_rows(table)]
        if not rows or is_layout_table(rows):
            continue
        for cells in rows:
            for cell in cells:
                if any(True for _ in cell.iter(*_CELL_HEADINGS)):
                    continue
                if any(True for element in cell.iterdescendants() if element.tag in _CELL_BLOCKS):
                    _flatten_cell(cell)


def _flatten_cell(cell: etree._Element) -> None:
    from copy import deepcopy

    pieces: list[_CellPiece] = []

    def walk(element: etree._Element) -> None:
        if element.text:
            pieces.append(element.text)
        number = _list_start(element) if element.tag == "ol" else 0
        for child in element:
            if not isinstance(child.tag, str):
                pass
            elif child.tag == "br":
                pieces.append(None)
            elif child.tag in _CELL_BLOCKS:
                pieces.append(None)
                if child.tag == "li":
                    pieces.append(f"{number}. " if element.tag == "ol" else "\u2022 ")
                    number += 1
                walk(child)
                pieces.append(None)
            else:
                inline = deepcopy(child)
                inline.tail = None
                pieces.append(inline)
            if child.tail:
                pieces.append(child.tail)

    walk(cell)
    # Breaks only between runs of text: none at either end, one for several in a row.
    lines: list[list[str | etree._Element]] = [[]]
    for piece in pieces:
        if piece is None:
            if lines[-1]:
                lines.append([])
        elif isinstance(piece, str) and not piece.strip() and not lines[-1]:
            continue
        else:
            lines[-1].append(piece)
    lines = [line for line in lines if any(not isinstance(p, str) or p.strip() for p in line)]
    for child in list(cell):
        cell.remove(child)
    cell.text = None
    for line in lines:
        # One paragraph per line: the extractor keeps a cell's paragraphs with their inline markup
        # (a <br> would make it split the line's markup from its text).
        paragraph = etree.SubElement(cell, "p") if len(lines) > 1 else cell
        last: etree._Element | None = None
        for piece in line:
            if isinstance(piece, str):
                if last is None:
                    paragraph.text = (paragraph.text or "") + piece
                else:
                    last.tail = (last.tail or "") + piece
            else:
                paragraph.append(piece)
                last = piece


def _list_start(listing: etree._Element) -> int:
    try:
        return int(listing.get("start", "1"))
    except ValueError:
        return 1


def prepare(tree: html.HtmlElement) -> PreparedPage:
    drop_scripts(tree)
    remove_hidden(tree)
    drop_headers(tree)
    clean_heading_anchors(tree)  # before the teaser cards: a permalink is not a link elsewhere
    drop_teaser_cards(tree)
    drop_furniture(tree)
    drop_small_print(tree)
    drop_microdata_dates(tree)
    keep_footnote_asides(tree)
    mark_task_items(tree)
    inline_table_cells(tree)
    # Before the figures: a highlighter that sets its code table in a figure (Hexo's
    # ``<figure class="highlight"><table>``) is read as the code block it becomes.
    code_languages = normalise_code_blocks(tree)
    keep_figure_captions(tree)
    mark_rules(tree)
    return PreparedPage(code_languages=code_languages, list_numbers=list_numbers(tree))


def visible_text_length(tree: etree._Element) -> int:
    """Characters of body text outside scripts and styles (whitespace runs counted once).

    For a document: the page's size as read. For an element: the text it holds.
    """
    root = _text_root(tree)
    # Every text node, less those of scripts and styles, each counted by C-level passes: choosing
    # the text nodes by their parent in XPath (``text()[not(parent::script)]``) took three times
    # as long, and a Python walk over every node longer still, while this measure is taken
    # several times per page. A text node whose parent is a script (say) is that script's code;
    # the script's tail has the script's parent as parent.
    return _collapsed_length(_ALL_TEXT(root)) - _collapsed_length(_void_texts(root))


def _collapsed_length(texts: Iterable[str]) -> int:
    """The summed length of ``texts``, each with whitespace runs counted once and ends trimmed."""
    return sum(map(len, map(" ".join, map(str.split, texts))))


def _void_texts(root: etree._Element) -> list[str]:
    """The text nodes of the scripts, styles, noscripts and templates in ``root`` (itself
    included), each node apart as XPath counts them (``.text`` would join two adjacent ones)."""
    return [text for element in root.iter(*_VOID_TEXT_TAGS) for text in _OWN_TEXT(element)]


def _text_root(tree: etree._Element) -> etree._Element:
    """Where a page's text is read from: its ``<body>``, else the element itself."""
    body = tree.find(".//body")
    return body if body is not None else tree


_ALL_TEXT = etree.XPath(".//text()", smart_strings=False)
_OWN_TEXT = etree.XPath("text()", smart_strings=False)
_VISIBLE_TEXT = etree.XPath(
    ".//text()[not(" + " or ".join(f"parent::{tag}" for tag in _VOID_TEXT_TAGS) + ")]",
    smart_strings=False,
)
