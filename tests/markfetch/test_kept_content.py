"""What the reader view dropped and markfetch now keeps, as the JavaScript markfetch does
(issue 25 item 3): trailing footnotes, list numbering, a short last paragraph and rules, figure
captions. Each page is the shape a real generator writes (Pandoc / markdown-it, Sphinx, WordPress,
Hugo), with enough prose around it for the reader view to take it as an article."""

from __future__ import annotations

import re

import pytest

from markfetch.extract import extract_article
from markfetch.footnotes import take_footnotes
from markfetch.htmlprep import parse_html

URL = "https://example.org/blog/harbour.html"


def prose(n: int, topic: str = "harbour") -> str:
    return "".join(
        f"<p>Paragraph {i} about the {topic}: the boats came in late that evening and the crew unloaded "
        f"their catch under the lamps while the gulls circled above the quay, waiting for scraps {i}.</p>"
        for i in range(n)
    )


def blog(body: str, *, after: str = "") -> str:
    """A blog page: navigation, the article, a sidebar and a footer."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Harbour notes</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About</a> <a href='/archive'>Archive</a></nav>"
        f"<main><article><h1>The harbour at night</h1>{body}</article>{after}</main>"
        "<footer><p>© 2025 Harbour notes. All rights reserved.</p></footer></body></html>"
    )


def body_of(page: str) -> str:
    return extract_article(page, URL).body


PANDOC_NOTES = (
    "<p>The tide tables were wrong that year<sup><a href='#fn1' class='footnote-ref' id='fnref1' "
    "role='doc-noteref'>1</a></sup>, and the harbour master said so<sup><a href='#fn2' "
    "class='footnote-ref' id='fnref2' role='doc-noteref'>2</a></sup>.</p>"
    "<section id='footnotes' class='footnotes footnotes-end-of-document' role='doc-endnotes'><hr>"
    "<ol><li id='fn1'><p>The almanac of 1911 printed the spring tides a day late. "
    "<a href='#fnref1' class='footnote-back' role='doc-backlink'>↩︎</a></p></li>"
    "<li id='fn2'><p>Letter to the <em>Harbour Gazette</em>, 3 March. "
    "<a href='#fnref2' class='footnote-back' role='doc-backlink'>↩︎</a></p></li></ol></section>"
)


def test_a_pandoc_footnote_section_comes_back_as_a_numbered_list_after_a_rule() -> None:
    body = body_of(blog(prose(5) + PANDOC_NOTES))
    assert "The tide tables were wrong that year" in body  # the paragraph before the notes stays
    notes = body[body.index("\n---\n") :]
    assert "1. The almanac of 1911 printed the spring tides a day late." in notes
    assert "2. Letter to the *Harbour Gazette*, 3 March." in notes
    assert "↩" not in body and "fnref" not in body  # back-links stripped
    assert body.rstrip().endswith("3 March.")


def test_sphinx_footnote_asides_come_back_with_their_labels_as_numbers() -> None:
    notes = (
        "<p>Lamps burned whale oil <a class='footnote-reference brackets' href='#id3' id='id1' "
        "role='doc-noteref'><span class='fn-bracket'>[</span>1<span class='fn-bracket'>]</span></a>.</p>"
        "<aside class='footnote-list brackets'>"
        "<aside class='footnote brackets' id='id3' role='doc-footnote'><span class='label'>"
        "<span class='fn-bracket'>[</span><a role='doc-backlink' href='#id1'>1</a>"
        "<span class='fn-bracket'>]</span></span><p>Until the gas works opened in 1862.</p></aside>"
        "</aside>"
    )
    body = body_of(blog(prose(5) + notes))
    assert "Lamps burned whale oil" in body
    assert re.search(r"\n---\n\n1\. Until the gas works opened in 1862\.\s*$", body), body[-300:]


def test_notes_the_article_never_points_to_stay_out() -> None:
    """A footnote section of a sidebar the reader view left out does not come back."""
    sidebar = (
        "<aside class='widget'><p>Popular</p><section class='footnotes' role='doc-endnotes'><ol>"
        "<li id='side1'><p>A sidebar's own note about something else entirely.</p></li></ol></section></aside>"
    )
    body = body_of(blog(prose(5), after=sidebar))
    assert "sidebar's own note" not in body and "---" not in body


def test_footnote_sections_without_ids_or_of_hostile_size_are_left_alone() -> None:
    tree = parse_html(
        "<html><body><section class='footnotes'><ol><li><p>No id, no link.</p></li></ol></section></body></html>"
    )
    assert tree is not None and take_footnotes(tree) == []
    assert "No id, no link." in "".join(tree.itertext())  # left in place for the extractor
    many = "".join(f"<li id='n{i}'>note {i}</li>" for i in range(1_500))
    tree = parse_html(f"<html><body><section class='footnotes'><ol>{many}</ol></section></body></html>")
    assert tree is not None and take_footnotes(tree) == []


def test_ordered_lists_keep_their_start_and_item_values() -> None:
    lists = (
        "<p>Having tied up, the crew went on with the rest of the evening's routine:</p>"
        "<ol start='3'><li>Third, hose the deck down and coil the lines.</li>"
        "<li>Fourth, carry the boxes of fish up to the market hall.</li></ol>"
        "<p>The harbour master's own list, kept in the office, went further still:</p>"
        "<ol><li value='10'>Tenth, log the catch in the ledger by weight.</li>"
        "<li>Eleventh, lock the gate to the quay for the night.</li></ol>"
    )
    body = body_of(blog(prose(3) + lists + prose(2, "lamps")))
    assert "3. Third, hose the deck down" in body and "4. Fourth, carry the boxes" in body
    assert "10. Tenth, log the catch" in body and "11. Eleventh, lock the gate" in body
    assert "1. Third" not in body


def test_a_short_last_paragraph_after_a_rule_stays_with_the_rule() -> None:
    body = body_of(blog(prose(5) + "<hr><p>The end.</p>"))
    assert re.search(r"scraps 4\.\n\n---\n\nThe end\.\s*$", body), body[-200:]


def test_rules_inside_the_article_stay_and_rules_at_its_edges_go() -> None:
    body = body_of(blog("<hr>" + prose(3) + "<hr>" + prose(3, "lamps") + "<hr><hr>"))
    assert body.count("---") == 1
    assert body.index("scraps 2.") < body.index("---") < body.index("about the lamps")
    assert not body.lstrip().startswith("---") and not body.rstrip().endswith("---")


def test_a_figure_caption_is_kept_in_place_in_italics() -> None:
    figure = (
        "<figure class='wp-block-image size-large'><img src='/wp-content/uploads/boats.jpg' "
        "alt='Boats moored at the quay' width='1024' height='683'>"
        "<figcaption class='wp-element-caption'>Fishing boats at the quay, photographed at dusk "
        "in October by <a href='/people/ana'>Ana</a>.</figcaption></figure>"
    )
    body = body_of(blog(prose(2) + figure + prose(2, "lamps")))
    caption = "*Fishing boats at the quay, photographed at dusk in October by [Ana](https://example.org/people/ana).*"
    assert caption in body
    assert body.index("scraps 1.") < body.index(caption) < body.index("about the lamps")
    assert "boats.jpg" not in body  # images stay out of the reader text


def test_a_figure_without_a_caption_leaves_nothing_behind() -> None:
    figure = "<figure><img src='/a.png' alt='A chart'></figure>"
    body = body_of(blog(prose(2) + figure + prose(2, "lamps")))
    assert "chart" not in body and "a.png" not in body and "**" not in body


def test_a_quotation_figure_keeps_its_quotation_and_its_attribution() -> None:
    """A quote block (Squarespace, WordPress's pullquote) is a figure of text: its caption is the
    attribution, and the quotation above it is the content."""
    quotes = "".join(
        f"<figure class='block-animation-none'><blockquote><span>\u201c</span>Review {i}: the "
        "classes were calm and precise, and every pose was explained twice for beginners."
        f"</blockquote><figcaption class='source'>\u2014 Reader {i}, London</figcaption></figure>"
        for i in range(3)
    )
    body = body_of(blog(prose(2) + quotes + prose(2, "lamps")))
    for i in range(3):
        assert f"Review {i}: the classes were calm and precise" in body
        assert f"Reader {i}, London" in body
    assert (
        body.index("scraps 1.")
        < body.index("Review 0")
        < body.index("Review 2")
        < body.index("about the lamps")
    )


def test_a_gallery_keeps_every_image_caption_and_its_own() -> None:
    images = "".join(
        f"<figure class='wp-block-image'><img src='/{i}.jpg'><figcaption>Boat {i} at the quay</figcaption></figure>"
        for i in range(3)
    )
    gallery = (
        f"<figure class='wp-block-gallery has-nested-images'>{images}"
        "<figcaption class='blocks-gallery-caption'>The boats of the harbour in spring</figcaption></figure>"
    )
    body = body_of(blog(prose(2) + gallery + prose(2, "lamps")))
    for i in range(3):
        assert f"*Boat {i} at the quay*" in body
    assert "The boats of the harbour in spring" in body


@pytest.mark.parametrize(
    "figure",
    [
        "<figure><blockquote>Less is more.</blockquote><figcaption>Mies van der Rohe</figcaption></figure>",
        "<figure class='highlight'><pre><code class='language-sh'>gem install tides</code></pre></figure>",
    ],
)
def test_a_short_quotation_or_command_in_a_figure_is_kept(figure: str) -> None:
    body = body_of(blog(prose(2) + figure + prose(2, "lamps")))
    assert "Less is more." in body or "gem install tides" in body
    if "Mies" in figure:
        assert "Mies van der Rohe" in body


# Hexo's highlighter writes every code block as a figure: its file name in the caption, a table of
# a line-number gutter and the code.
HEXO_CODE = (
    "<figure class='highlight python'><figcaption><span>tides.py</span></figcaption><table><tr>"
    "<td class='gutter'><pre><span class='line'>1</span><br><span class='line'>2</span></pre></td>"
    "<td class='code'><pre><span class='line'><span class='keyword'>def</span> high_water(day):</span><br>"
    "<span class='line'>    <span class='keyword'>return</span> almanac[day] + 1</span></pre></td>"
    "</tr></table></figure>"
)


def test_a_code_block_set_in_a_figure_by_its_highlighter_is_kept_as_code() -> None:
    body = body_of(blog(prose(2) + HEXO_CODE + prose(2, "lamps")))
    assert "*tides.py*" in body
    assert "```python\ndef high_water(day):\n    return almanac[day] + 1\n```" in body
    assert (
        body.index("scraps 1.")
        < body.index("tides.py")
        < body.index("def high_water")
        < body.index("about the lamps")
    )


def test_a_table_in_a_figure_keeps_its_caption_after_it() -> None:
    figure = (
        "<figure class='wp-block-table'><table><thead><tr><th>Boat</th><th>Catch (kg)</th></tr></thead>"
        "<tbody><tr><td>Mary Ann</td><td>410</td></tr><tr><td>Gull</td><td>385</td></tr></tbody></table>"
        "<figcaption>Table 1: The catch landed on 3 March.</figcaption></figure>"
    )
    body = body_of(blog(prose(2) + figure + prose(2, "lamps")))
    assert "| Mary Ann | 410 |" in body
    assert "*Table 1: The catch landed on 3 March.*" in body
    assert body.index("| Gull | 385 |") < body.index("Table 1") < body.index("about the lamps")


def test_no_marker_of_a_rule_ever_reaches_the_text() -> None:
    """A rule inside running inline text (``<span>a<hr>b</span>``) cannot leak its marker."""
    body = body_of(
        blog(prose(3) + "<div>Before the rule <span>inline<hr>after</span> the rule.</div>" + prose(2))
    )
    assert "markfetch-rule" not in body and "\u2042" not in body


def test_a_teaser_list_goes_but_a_roundup_of_entries_with_linked_headings_stays() -> None:
    """Story teasers (a linked headline and a date) are furniture; a roundup's entries (a linked
    heading and a paragraph of their own) are the page's content."""
    teasers = (
        "<ul class='more'>"
        + "".join(
            f"<li><h3><a href='/story-{i}'>Another story number {i} from the harbour desk</a></h3>"
            f"<span>3 March 2025</span></li>"
            for i in range(3)
        )
        + "</ul>"
    )
    roundup = (
        "<ol>"
        + "".join(
            f"<li><h3><a href='/recipes/{i}'>Recipe {i}: harbour fish stew</a></h3><p>Simmer the catch of "
            f"the day with fennel, tomatoes and saffron for forty minutes, then finish it with parsley and "
            f"lemon; serves {i + 2}.</p></li>"
            for i in range(3)
        )
        + "</ol>"
    )
    body = body_of(blog(prose(3) + roundup + prose(1, "lamps") + teasers))
    assert "Another story number" not in body
    for i in range(3):
        assert f"Recipe {i}: harbour fish stew" in body and f"serves {i + 2}." in body


def test_a_line_of_links_to_the_sites_legal_pages_goes_but_a_sentence_naming_them_stays() -> None:
    legal = (
        "<p><a href='/privacy'>Privacy Policy</a> | <a href='/cookies'>Cookie Notice</a> | "
        "<a href='/terms'>Terms of Use</a></p>"
    )
    sentence = "<p>Read the harbour authority's <a href='/privacy'>privacy policy</a> before you book a berth online.</p>"
    chapters = "<p><a href='/part-2'>Part two: the lamps</a> | <a href='/part-3'>Part three: the tide</a></p>"
    body = body_of(blog(prose(3) + legal + sentence + prose(1, "lamps") + chapters + prose(2, "tide")))
    assert "Cookie Notice" not in body and "Terms of Use" not in body
    assert "before you book a berth online" in body
    assert "Part two: the lamps" in body


def test_control_characters_in_a_page_neither_end_the_extraction_nor_reach_the_markdown() -> None:
    # A form feed in a <pre> (C and Python sources use it as a page break) made lxml refuse the
    # code block's text and the whole extraction fail; references to control characters too.
    for code, kept in [
        ("int a;\x0cint b;", "int a;\nint b;"),
        ("x&#12;y", "x\ny"),
        ("x&#x0C;y", "x\ny"),
        ("a&#1;b\x01c", "abc"),
        ("a&#x1f;b&#0000008;c", "abc"),
    ]:
        body = body_of(blog(prose(3) + f"<pre>{code}</pre><p>Closing words{code}.</p>"))
        assert f"```\n{kept}\n```" in body, code
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", body)
