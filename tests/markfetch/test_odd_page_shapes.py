"""Page shapes that failed with a wrong message, or passed a part for the whole (red-team findings).

1. A page opening with more than one XML declaration (two back to back, one behind a control
   character, one without its ``?>``) failed as "the page is empty": only the first was removed,
   and lxml refuses a str that opens with a declaration naming an encoding.
2. An article inside hundreds of nested layout tables (``<table><tr><td>`` per level) failed as
   "no readable text (it may be rendered by JavaScript)": flattening the over-deep page put the
   deep text into the ``<table>`` or ``<tr>`` at the cut depth, whose own text nothing reads.
3. A page nested past what even the huge-tree parse reads (2,048 open elements) with text above
   that depth came back as that text alone, silently: a reader took it for the whole page. The
   document now ends with a note saying the page is cut (:data:`markfetch.nesting.CUT_NOTE`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from lxml import html

from markfetch.extract import ExtractionFailed, extract_article
from markfetch.nesting import CUT_NOTE, HUGE_DEPTH, flatten
from tests.markfetch.conftest import site_url
from tests.markfetch.test_cli import markfetch
from tests.markfetch.test_mcp import calls, in_process
from tests.markfetch.test_nesting import depth_of
from tests.support.http_server import LocalServer, Reply

HTML = "text/html; charset=utf-8"
PARAGRAPHS = "".join(
    f"<p>Paragraph {i} of an article that a reader view has every reason to keep.</p>" for i in range(12)
)
ARTICLE = "<h1>Deep</h1>" + PARAGRAPHS
DECLARATION = '<?xml version="1.0" encoding="utf-8"?>'
XHTML_DOCTYPE = (
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
    '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">'
)
PAGE = f"<html><head><title>Deep</title></head><body><article>{ARTICLE}</article></body></html>"
XHTML_PAGE = (
    '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en"><head><title>Deep</title></head>'
    f"<body><article>{ARTICLE}</article></body></html>"
)


def keeps_the_article(body: str) -> bool:
    return all(f"Paragraph {i} of" in body for i in range(12)) and "<?" not in body and "?>" not in body


# -- XML declarations --------------------------------------------------------------------------

DECLARED = {
    "at the top": DECLARATION + PAGE,
    "after a BOM": "\ufeff" + DECLARATION + PAGE,
    "after whitespace": "\n \t\n" + DECLARATION + "\n" + PAGE,
    "after a comment": "<!-- generated -->" + DECLARATION + PAGE,
    "twice back to back": DECLARATION + DECLARATION + PAGE,
    "twice apart": DECLARATION + "\n" + DECLARATION + "\n" + PAGE,
    "three times after whitespace": "  " + DECLARATION * 3 + PAGE,
    "twice around a BOM": DECLARATION + "\ufeff" + DECLARATION + PAGE,
    "behind a control character": "\x00" + DECLARATION + PAGE,
    "behind a control reference": "&#1;" + DECLARATION + PAGE,
    "twice around a control character": DECLARATION + "\x01" + DECLARATION + PAGE,
    "single-quoted": "<?xml version='1.0' encoding='utf-8'?>" + PAGE,
    "without its question mark": '<?xml version="1.0" encoding="utf-8">' + PAGE,
    "with a stylesheet instruction": DECLARATION + '<?xml-stylesheet type="text/xsl" href="s.xsl"?>' + PAGE,
    "a stylesheet instruction naming an encoding": '<?xml-stylesheet encoding="utf-8" href="s"?>' + PAGE,
    "inside the body": "<html><body>" + DECLARATION + f"<article>{ARTICLE}</article></body></html>",
    "XHTML with its doctype": DECLARATION + "\n" + XHTML_DOCTYPE + "\n" + XHTML_PAGE,
    "XHTML, declared twice": DECLARATION + DECLARATION + XHTML_DOCTYPE + XHTML_PAGE,
    "XHTML after a BOM": "\ufeff" + DECLARATION + "\r\n" + XHTML_DOCTYPE + XHTML_PAGE,
}


@pytest.mark.parametrize("page", DECLARED.values(), ids=DECLARED.keys())
@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_a_page_opening_with_xml_declarations_yields_its_article(page: str, max_elements: int) -> None:
    article = extract_article(page, "https://example.com/a", max_elements=max_elements)
    assert article.title == "Deep"
    assert keeps_the_article(article.body)


def test_a_page_of_nothing_but_declarations_is_empty() -> None:
    for page in (DECLARATION * 3, DECLARATION + "\n  ", '<?xml version="1.0" encoding="utf-8"'):
        with pytest.raises(ExtractionFailed, match="empty"):
            extract_article(page)


def test_a_declaration_run_costs_linear_time() -> None:
    import time

    started = time.monotonic()
    for page in (
        DECLARATION * 50_000 + PAGE,  # 2 MB of declarations
        # One that never ends: libxml2 took 52 s over 200 KB of it when it opened the page.
        "<?xml encoding='utf-8'" + " " * 2_000_000,
        " " * 2_000_000 + "<p>text</p>",
    ):
        with contextlib.suppress(ExtractionFailed):
            extract_article(page)
    assert time.monotonic() - started < 20


# -- layout tables -------------------------------------------------------------------------------


def in_tables(depth: int, cell: str = "<table><tr><td>", close: str = "</td></tr></table>") -> str:
    return "<html><body>" + cell * depth + ARTICLE + close * depth + "</body></html>"


TOWERS = {
    "tables": lambda depth: in_tables(depth),
    "tables with tbody": lambda depth: in_tables(
        depth, "<table><tbody><tr><td>", "</td></tr></tbody></table>"
    ),
    "tables with a second cell": lambda depth: in_tables(
        depth, "<table><tr><td>menu</td><td>", "</td></tr></table>"
    ),
    "tables with text beside": lambda depth: in_tables(depth, "<table><tr><td>level ", "</td></tr></table>"),
    "tables never closed": lambda depth: "<html><body>" + "<table><tr><td>" * depth + ARTICLE,
    "divs, tables and spans": lambda depth: in_tables(
        depth, "<div><table><tr><td><span>", "</span></td></tr></table></div>"
    ),
    "divs": lambda depth: "<html><body>" + "<div>" * depth + ARTICLE + "</div>" * depth + "</body></html>",
}


@pytest.mark.parametrize("depth", [50, 100, 300])
@pytest.mark.parametrize("tower", TOWERS.values(), ids=TOWERS.keys())
@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_an_article_inside_nested_layout_tables_keeps_its_text(tower, depth: int, max_elements: int) -> None:
    article = extract_article(tower(depth), "https://example.com/a", max_elements=max_elements)
    assert all(f"Paragraph {i} of" in article.body for i in range(12))


@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_a_tower_of_one_cell_tables_keeps_the_articles_paragraphs(max_elements: int) -> None:
    article = extract_article(in_tables(300), "https://example.com/a", max_elements=max_elements)
    assert article.title == "Deep"
    assert "\n\nParagraph 11 of" in article.body  # paragraphs still, not one run of text


@pytest.mark.parametrize("tower", [in_tables, TOWERS["tables with a second cell"]])
def test_tables_nested_past_what_any_parse_reads_fail_saying_so(tower) -> None:
    """1,000 levels of tables are 3,000 open elements: the parse stops at HUGE_DEPTH, above the
    article. With nothing readable above it, the message says so; with text above, that is kept."""
    page = tower(1000)
    try:
        body = extract_article(page, "https://example.com/a").body
    except ExtractionFailed as failure:
        assert f"more than {HUGE_DEPTH:,} deep" in str(failure) and "JavaScript" not in str(failure)
    else:
        assert "menu" in body
        assert extract_article(page, "https://example.com/a").markdown.endswith(f"\n\n{CUT_NOTE}\n")


def test_flatten_moves_text_below_a_tables_frame_into_its_cell() -> None:
    """The element at the cut depth is a ``<tr>``: its text would be read by nothing, so the
    text of what lies below goes to the cell around its table."""
    tree = html.document_fromstring(
        "<html><body><table><tr><td>side</td><td><table><tr><td>a</td><td><p>deep</p></td></tr>"
        "</table></td></tr></table></body></html>"
    ).body
    flatten(tree, max_depth=4)  # body > table > tr > td > table (4) > tr > td > p (7)
    assert depth_of(tree) <= 4
    side, cell = tree.findall(".//td")
    assert side.text == "side"
    assert len(cell) == 0 and (cell.text or "").split() == ["a", "deep"]  # its own text, read


def test_flatten_replaces_a_one_cell_layout_table_by_its_cell() -> None:
    tree = html.fromstring(
        "<div>"
        + "<table width='100%' border=0><tbody><tr valign='top'><td class='x'>" * 5
        + "<p>one</p><p>two</p>"
        + "</td></tr></tbody></table>" * 5
        + "<table><tr><td>a</td><td>b</td></tr></table>"  # two cells: a table
        + "<table class='promo'><tr><td><p>c</p><p>d</p></td></tr></table>"  # named: read by name
        + "<table><caption>e</caption><tr><td><p>f</p><p>g</p></td></tr></table></div>"
    )
    flatten(tree, max_depth=4)  # the tower's paragraphs are 21 deep
    assert html.tostring(tree, encoding="unicode") == (
        '<div><div class="x"><p>one</p><p>two</p></div>'
        "<table><tr><td>a</td><td>b</td></tr></table>"
        '<table class="promo"><tr><td><p>c</p><p>d</p></td></tr></table>'
        "<table><caption>e</caption><tr><td><p>f</p><p>g</p></td></tr></table></div>"
    )


def test_flattening_many_tables_costs_linear_time() -> None:
    import time

    page = (
        "<html><body>"
        + "<div>x" * 260
        + "<table><tr><td>a</td><td><table><tr><td>y</td></tr></table></td></tr></table>" * 50_000
        + "</body></html>"
    )
    tree = html.document_fromstring(page, parser=html.HTMLParser(huge_tree=True))
    started = time.monotonic()
    flatten(tree)
    assert time.monotonic() - started < 10
    assert depth_of(tree) <= 200 and tree.text_content().count("y") == 50_000


# -- text above the cut --------------------------------------------------------------------------


def over_text(depth: int) -> str:
    """The article at the top of the page, then more text ``depth`` ``<div>``s deep, then a closing line."""
    return (
        f"<html><head><title>Deep</title></head><body><article>{ARTICLE}"
        + "<div>" * depth
        + "<p>More text, nested far below the article, that the page also holds.</p>"
        + "</div>" * depth
        + "<p>A closing line after the tower.</p></article></body></html>"
    )


@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_a_page_cut_by_its_nesting_returns_the_text_above_the_cut_and_says_so(max_elements: int) -> None:
    """3,000 levels: the parse stops at HUGE_DEPTH, below the article. The article is returned and
    the document ends with the note, so no one takes it for the whole page; the body (the page's
    own text) holds no note."""
    article = extract_article(over_text(3000), "https://example.com/a", max_elements=max_elements)
    assert all(f"Paragraph {i} of" in article.body for i in range(12))
    assert "nested far below" not in article.markdown and "closing line" not in article.markdown
    assert article.markdown.endswith(
        f"Paragraph 11 of an article that a reader view has every reason to keep.\n\n{CUT_NOTE}\n"
    )
    assert article.markdown.count("(markfetch:") == 1 and "markfetch:" not in article.body
    assert CUT_NOTE == (
        "(markfetch: the page nests its elements more than 2,048 deep, deeper than markfetch reads; "
        "it is cut at that depth, and the rest of the page is missing)"
    )


@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_a_page_nested_within_what_the_parse_reads_has_no_note(max_elements: int) -> None:
    """1,500 levels: past libxml2's default 256, so parsed again and flattened, but read whole."""
    article = extract_article(over_text(1500), "https://example.com/a", max_elements=max_elements)
    assert all(f"Paragraph {i} of" in article.body for i in range(12))
    if max_elements == 5:  # the region keeps every line; the reader view may judge the short ones
        assert "nested far below" in article.body and "closing line after the tower" in article.body
    assert "markfetch:" not in article.markdown


@pytest.mark.parametrize(
    "page",
    [PAGE, in_tables(300), in_tables(HUGE_DEPTH // 3 - 10)],
    ids=["normal", "300 tables", "672 tables"],
)
def test_a_page_that_is_not_cut_has_no_note(page: str) -> None:
    article = extract_article(page, "https://example.com/a")
    assert keeps_the_article(article.markdown) and "markfetch:" not in article.markdown
    assert article.notes == ()


def test_the_cli_and_the_server_both_tell_of_the_cut(server: LocalServer, settings, tmp_path: Path) -> None:
    server.route("/cut", Reply(body=over_text(3000).encode(), content_type=HTML))
    server.route("/whole", Reply(body=over_text(1500).encode(), content_type=HTML))
    app, _ = in_process(settings, [tmp_path])
    cut, whole = calls(app, {"url": site_url(server, "/cut")}, {"url": site_url(server, "/whole")})
    assert cut.is_error is False and whole.is_error is False
    assert cut.content[0].text.startswith("# Deep\n\nParagraph 0 of")
    assert cut.content[0].text.endswith(f"\n\n{CUT_NOTE}\n")
    assert "markfetch:" not in whole.content[0].text and "Paragraph 11 of" in whole.content[0].text

    done = markfetch(server.url("/cut"), cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("# Deep\n\nParagraph 0 of") and done.stdout.endswith(f"\n\n{CUT_NOTE}\n")
    done = markfetch(server.url("/whole"), cwd=tmp_path)
    assert done.returncode == 0 and "Paragraph 11 of" in done.stdout and "markfetch:" not in done.stdout


# -- through the MCP server ------------------------------------------------------------------------


def test_over_mcp_both_shapes_yield_their_article(server: LocalServer, settings, tmp_path: Path) -> None:
    declared = ("\ufeff" + DECLARATION + DECLARATION + XHTML_DOCTYPE + XHTML_PAGE).encode("utf-8")
    server.route("/declared", Reply(body=declared, content_type=HTML))
    server.route("/tables", Reply(body=in_tables(300).encode(), content_type=HTML))
    server.route("/bottomless", Reply(body=in_tables(1000).encode(), content_type=HTML))
    app, _ = in_process(settings, [tmp_path])
    declared_result, tables_result, bottomless = calls(
        app,
        {"url": site_url(server, "/declared")},
        {"url": site_url(server, "/tables")},
        {"url": site_url(server, "/bottomless")},
    )
    for result in (declared_result, tables_result):
        assert result.is_error is False
        assert result.content[0].text.startswith("# Deep\n\n")
        assert keeps_the_article(result.content[0].text)
    assert bottomless.is_error is True
    message = bottomless.content[0].text
    assert message.startswith("[extraction_failed] ") and "deep" in message and "JavaScript" not in message
