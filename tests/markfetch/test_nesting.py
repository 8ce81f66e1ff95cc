"""Pages nested past libxml2's default depth (256 open elements) are read whole, or fail saying why.

Before: the parser dropped everything below that depth, so an article inside 300 ``<div>``s
failed as "may be rendered by JavaScript", and an old page with an unclosed ``<font>`` per line
lost its text after line 256.
"""

from __future__ import annotations

import pytest
from lxml import etree, html

from markfetch.errors import ErrorCode
from markfetch.extract import ExtractionFailed, extract_article
from markfetch.htmlprep import parse_page
from markfetch.nesting import HUGE_DEPTH, MAX_DEPTH, flatten
from tests.markfetch.conftest import site_url
from tests.markfetch.test_service import HTML, error_of
from tests.support.http_server import LocalServer, Reply

ARTICLE = (
    "<h1>Deep</h1>"
    + "".join(
        f"<p>Paragraph {i} of an article that a reader view has every reason to keep.</p>" for i in range(12)
    )
    + "<ul><li>first point</li><li>second point</li></ul>"
    + "<p>See <a href='/more'>the follow-up</a> for the rest of the story.</p>"
)


def in_divs(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + ARTICLE + "</div>" * depth + "</body></html>"


def unclosed_fonts(lines: int) -> str:
    """A legacy page: one ``<font>`` opened per line and never closed, then the article."""
    return (
        "<html><body>"
        + "".join(f"<font size=2>line {i}<br>\n" for i in range(lines))
        + ARTICLE
        + "</body></html>"
    )


def depth_of(root: etree._Element) -> int:
    """How many levels below ``root`` its deepest element lies."""
    above = sum(1 for _ in root.iterancestors())
    return max(sum(1 for _ in element.iterancestors()) for element in root.iter()) - above


@pytest.mark.parametrize("depth", [300, 1000, HUGE_DEPTH - 10])
@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_an_article_inside_a_tower_of_divs_keeps_its_text_and_structure(
    depth: int, max_elements: int
) -> None:
    article = extract_article(in_divs(depth), "https://example.com/a", max_elements=max_elements)
    assert article.title == "Deep"
    assert all(f"Paragraph {i} of" in article.body for i in range(12))
    assert "\n\nParagraph 11 of" in article.body  # still paragraphs, not one run of text
    if max_elements == 5:  # the reader view drops a short list and link on any page; the region keeps them
        assert "- first point\n- second point" in article.body
        assert "[the follow-up](https://example.com/more)" in article.body


@pytest.mark.parametrize("lines", [300, 1500])
@pytest.mark.parametrize("max_elements", [50_000, 5], ids=["reader", "full-body"])
def test_a_legacy_page_of_unclosed_fonts_keeps_the_text_after_line_256(lines: int, max_elements: int) -> None:
    body = extract_article(unclosed_fonts(lines), "https://example.com/", max_elements=max_elements).body
    assert f"line {lines - 1}" in body
    assert all(f"Paragraph {i} of" in body for i in range(12))


def test_a_page_within_the_default_depth_is_parsed_once_and_not_flattened() -> None:
    tree, cut = parse_page(in_divs(240))
    assert tree is not None and not cut
    assert depth_of(tree) > MAX_DEPTH  # flattening is only for pages the default parse cut


def test_a_flattened_page_is_no_deeper_than_the_limit_and_keeps_every_word() -> None:
    page = unclosed_fonts(600)
    tree, cut = parse_page(page)
    assert tree is not None and not cut
    assert depth_of(tree) <= MAX_DEPTH
    whole = html.document_fromstring(page, parser=html.HTMLParser(huge_tree=True)).text_content()
    # Flattening puts line breaks between blocks (the page writes "<h1>Deep</h1><p>Paragraph").
    assert "".join(tree.text_content().split()) == "".join(whole.split())


def test_flatten_unwraps_empty_wrappers_before_cutting_and_keeps_blocks_apart() -> None:
    tree = html.fromstring(
        "<div>"
        + "<span>" * 8
        + "<p>one</p><p>two <b>bold</b></p>"
        + "</span>" * 8
        + "<section><p>x</p></section></div>"
    )
    flatten(tree, max_depth=3)  # the innermost span holds two blocks: it is no empty wrapper
    assert etree.tostring(tree, encoding="unicode") == (
        "<div><span><p>one</p><p>two <b>bold</b></p></span><p>x</p></div>"
    )

    tower = html.fromstring("<div>" + "<div>a " * 6 + "<p>end</p>" + "</div>" * 6 + " tail</div>")
    flatten(tower, max_depth=2)
    assert depth_of(tower) <= 2
    assert tower.text_content().split() == ["a"] * 6 + ["end", "tail"]
    assert "\nend\n" in tower.text_content()  # the paragraph stays a line of its own


def test_a_page_nested_past_what_any_parse_reads_fails_saying_so() -> None:
    with pytest.raises(ExtractionFailed) as info:
        extract_article(in_divs(HUGE_DEPTH + 500), "https://example.com/")
    assert f"more than {HUGE_DEPTH:,} deep" in str(info.value) and "JavaScript" not in str(info.value)


def test_over_http_a_deep_page_is_read_and_a_bottomless_one_is_a_one_line_error(
    server: LocalServer, settings
) -> None:
    from tests.markfetch.conftest import run_document

    server.route("/deep", Reply(body=in_divs(1200).encode(), content_type=HTML))
    server.route("/bottomless", Reply(body=in_divs(100_000).encode(), content_type=HTML))
    assert "Paragraph 11 of" in run_document(settings, site_url(server, "/deep"))
    error = error_of(settings, site_url(server, "/bottomless"))
    assert error.code is ErrorCode.EXTRACTION_FAILED and "deep" in error.message and "\n" not in error.message
