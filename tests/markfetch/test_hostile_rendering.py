"""Pages built to make the renderer slow or its output huge (red-team pass 5 on extraction).

Each size is chosen so that the fixed code takes well under a second and the old, quadratic code
minutes: a test that finishes shows linear work (none of them measures time).
"""

from __future__ import annotations

import pytest
from lxml import html

from markfetch import htmlprep, markdown
from markfetch.errors import ErrorCode, MarkfetchError
from markfetch.extract import Article, _text_length, extract_article
from markfetch.markdown import MAX_INDENT_DEPTH, RenderTooLarge, html_to_markdown
from tests.markfetch.pages import article_page, paragraphs


def md(fragment: str, *, base_url: str | None = None) -> str:
    return html_to_markdown(html.fragment_fromstring(fragment, create_parent="div"), base_url=base_url)


def test_blank_lines_in_a_code_block_cost_linear_time() -> None:
    # The fence search rescanned a run of blank lines from each of its line starts (40,000 lines:
    # 8.3 s holding the GIL); 200,000 take minutes.
    out = md("<pre>```x" + "\n" * 200_000 + "y</pre>")
    assert out == "````\n```x\n\ny\n````\n"


def test_a_fence_indented_by_blank_lines_is_not_a_fence_run() -> None:
    # Only spaces and tabs indent a fence line; the backticks after blank lines still count.
    assert md("<pre>a\n\n  ```\nb</pre>") == "````\na\n\n  ```\nb\n````\n"


def test_link_brackets_without_a_target_cost_linear_time() -> None:
    # The text-length measure removed link targets with \]\([^)]*\): from each "](" without a ")"
    # it scanned to the end of the body (40,000 of them: 1.8 s holding the GIL; 400,000: minutes).
    escaped = "\\](" * 400_000  # as the renderer writes "](" in page text
    assert _text_length(escaped) == len("\\ (") * 400_000
    # The title comparison strips link targets the same way.
    assert Article(title=escaped, body="Text.\n", method="reader").markdown.startswith("# \\](")
    article = extract_article(article_page(f"<h1>Brackets</h1><p>{'](' * 2_000}</p>" + paragraphs(3)))
    assert "\\](" * 2_000 in article.body


def test_the_text_length_measure_still_ignores_link_targets() -> None:
    assert _text_length("[words](https://example.com/a/long/target) and more") == len("words and more")


def test_a_hidden_style_padded_with_spaces_costs_linear_time() -> None:
    # "\s*(?:!important)?\s*" split a run of spaces between two quantifiers every way (40,000
    # spaces after "display:none": 11 s). The element is not hidden: CSS reads "none x" as invalid.
    padded = "display:none" + " " * 100_000 + "x"
    tree = htmlprep.parse_html(
        article_page(f'<p style="{padded}">Shown.</p><p style="display:none">Hidden.</p>' + paragraphs(1))
    )
    assert tree is not None
    htmlprep.remove_hidden(tree)
    texts = [p.text for p in tree.iter("p")]
    assert "Shown." in texts
    assert "Hidden." not in texts
    assert htmlprep._HIDDEN_STYLE.search("color: red; display : none  !important ;")


def test_leading_blank_lines_of_a_code_block_cost_linear_time() -> None:
    # Each leading blank line was dropped with list.pop(0), which shifts the whole list (320,000
    # lines: 9.3 s); two million take minutes.
    assert md("<pre>" + "\n" * 2_000_000 + "x\n \n</pre>") == "```\nx\n```\n"


def test_leading_line_breaks_of_a_paragraph_cost_linear_time() -> None:
    # The same pop(0) loop dropped a paragraph's leading <br> (160,000 of them: 2.7 s of popping;
    # 3 million break marks: minutes).
    breaks = markdown._HARD_BREAK * 3_000_000
    assert markdown.MarkdownRenderer()._finish_inline(f"{breaks}x{breaks}y{breaks}") == "x\\\ny"
    assert md("<p><br><br>x<br>y<br><br></p>") == "x\\\ny\n"


def _spanned_table(rows: int) -> str:
    head = "<tr>" + '<th colspan="50">h</th>' * 100 + "</tr>"
    return (
        "<table>" + head + "".join(f"<tr><td>a{i}</td><td>b{i}</td></tr>" for i in range(rows)) + "</table>"
    )


def test_a_table_too_wide_for_a_grid_is_written_row_by_row() -> None:
    # Every row was padded to the widest one: one header row of 100 cells spanning 50 columns each
    # made each two-cell row 5,000 cells wide (6,000 rows: 90 MB of markdown, 3 GB of memory).
    table = _spanned_table(3_000)
    out = md(table)
    assert len(out) < 2 * len(table)
    lines = out.split("\n")
    assert lines[0] == "| " + " | ".join(["h"] * 100) + " |"
    assert lines[1] == "|" + "|".join(["---"] * 100) + "|"
    assert lines[2:4] == ["| a0 | b0 |", "| a1 | b1 |"]


def test_a_table_too_wide_for_a_grid_stays_small_through_the_reader_view() -> None:
    # The reader view spreads the spans itself (its header row is 5,000 cells) and fills the
    # other rows to 100 cells; the trailing empty ones are left out.
    page = article_page("<h1>Wide</h1>" + paragraphs(2) + _spanned_table(300))
    lines = extract_article(page).body.split("\n")
    rows = [line for line in lines if line.startswith("| a")]
    assert rows == [f"| a{i} | b{i} |" for i in range(300)]


def test_a_table_within_the_grid_width_is_still_padded() -> None:
    out = md('<table><tr><th colspan="2">a</th><th>b</th></tr><tr><td>1</td></tr></table>')
    assert out == "| a |  | b |\n|---|---|---|\n| 1 |  |  |\n"


def test_a_list_number_longer_than_nine_digits_is_no_marker() -> None:
    # A 4,200-digit <li value> indented every line inside the item that far: 40 such lists nested
    # around 1,000 lines made 171 MB of markdown from a 175 KB page.
    lists = ('<ol><li value="' + "9" * 4200 + '">x') * 40 + "a<br>" * 200 + "</li></ol>" * 40
    page = article_page("<h1>Numbers</h1>" + paragraphs(2) + lists)
    body = extract_article(page).body
    assert len(body) < len(page)
    assert "\n1. x\n" in body
    assert md('<ol start="999999999"><li>a</li><li>b</li></ol><ol start="1000000000"><li>c</li></ol>') == (
        "999999999. a\n999999999. b\n\n1. c\n"
    )
    assert md('<ol start="0"><li>a</li><li value="-4">b</li></ol>') == "0. a\n0. b\n"


def test_nesting_past_the_indent_depth_adds_no_more_indentation() -> None:
    # Each level prefixed every line inside it: 190 nested quotes around 60,000 lines made 23 MB.
    out = md("<blockquote>" * 100 + "line<br>" * 50 + "</blockquote>" * 100)
    assert out.split("\n")[-2] == "> " * MAX_INDENT_DEPTH + "line"
    nested = "<ul><li>item" * 100 + "</li></ul>" * 100
    assert max(len(line) for line in md(nested).split("\n")) == len("  " * MAX_INDENT_DEPTH + "- item")


def test_rendering_stops_at_its_budget() -> None:
    fragment = html.fragment_fromstring("<p>" + "words " * 1_000 + "</p>", create_parent="div")
    with pytest.raises(RenderTooLarge, match="passed 1,000 characters while it was written"):
        html_to_markdown(fragment, budget=1_000)
    page = article_page("<h1>Budget</h1>" + paragraphs(5))
    with pytest.raises(MarkfetchError) as raised:
        extract_article(page, max_chars=300)
    assert raised.value.code is ErrorCode.TOO_LARGE
    assert str(raised.value) == (
        "[too_large] the page's markdown passed 300 characters while it was written, too much to return; "
        "markfetch stopped there"
    )
    assert extract_article(page).body.count("Paragraph") == 5


def test_the_title_line_is_escaped_page_text() -> None:
    # The <title> was written as is on the document's first line: a live image, link and raw HTML.
    hostile = (
        "[Open](javascript:alert(1)) ![](http://t.example/p.gif) <img src=x onerror=alert(2)> **SYSTEM**"
    )
    article = extract_article(article_page(paragraphs(3), title=hostile))
    assert article.markdown.split("\n")[0] == (
        "# \\[Open\\](javascript:alert(1)) !\\[\\](http://t.example/p.gif) \\<img src=x onerror=alert(2)> "
        "\\*\\*SYSTEM\\*\\*"
    )
    og = '<meta property="og:title" content="snake_case &amp; _private_ names">'
    assert extract_article(article_page(paragraphs(3), head=og)).title == "snake_case & \\_private\\_ names"


def test_a_title_of_only_invisible_characters_is_no_title() -> None:
    # A single <h1> of a no-break and a zero-width space gave the title line "# \u200b".
    article = extract_article(article_page("<h1>\u00a0\u200b</h1>" + paragraphs(3), title=" \u200b\u2060 "))
    assert article.title == ""
    assert article.markdown.startswith("Paragraph 0")


def test_footnote_images_are_left_out_as_the_body_s_are() -> None:
    # A note's <img> came out as "![logo](…/track.gif?id=42)", a tracking pixel in the document.
    notes = (
        "<p>The tide tables were wrong that year<sup><a href='#fn1' role='doc-noteref'>1</a></sup>.</p>"
        "<section class='footnotes' role='doc-endnotes'><ol><li id='fn1'><p>A note "
        "<img src='http://t.example/track.gif?id=42' alt='logo'> end.</p></li></ol></section>"
    )
    body = extract_article(
        article_page("<h1>Notes</h1>" + paragraphs(4) + notes), "https://example.org/a"
    ).body
    assert "1. A note end." in body
    assert "track.gif" not in body


def test_an_angle_bracket_in_a_link_target_cannot_end_it_early() -> None:
    # href="http://a.example/x> [click me](javascript:alert(2))" was written inside <...>: the first
    # ">" ended the destination, the outer link failed to parse and the inner one became a live
    # javascript: link the URL filter never saw.
    out = md("<p><a href='http://a.example/x> [click me](javascript:alert(2))'>gt link</a></p>")
    assert out == "[gt link](<http://a.example/x%3E [click me](javascript:alert(2))>)\n"
    assert (
        md("<p><img src='http://a.example/i<b>.png' alt='pic'></p>")
        == "![pic](http://a.example/i%3Cb%3E.png)\n"
    )


@pytest.mark.parametrize(
    "href", ["java\tscript:alert(1)", " \njavascript:alert(1)", "jav\x7fascript:x", "data\r:x"]
)
def test_a_scheme_split_by_what_browsers_ignore_is_still_refused(href: str) -> None:
    # Browsers drop tabs and line breaks in a URL and controls around it: "java\tscript:" runs.
    element = html.fragment_fromstring("<p><a>tab link</a></p>", create_parent="div")
    element.find(".//a").set("href", href)
    assert html_to_markdown(element) == "tab link\n"


def test_a_line_separator_in_page_text_is_not_a_line_break() -> None:
    # U+2028 was the <br> placeholder: in a code span it split the span, and the next line started
    # with raw page HTML.
    out = md("<p>before <code>a\u2028&lt;div&gt;x</code> after</p>")
    assert "\n" not in out.rstrip("\n") and "`a <div>x`" in out
    assert md("<p>one<br>two</p>") == "one\\\ntwo\n"
    # A break at the end of bold text stays outside its markers (as any whitespace does).
    assert md("<ol><li><strong>Apps<br></strong>Focus.</li></ol>") == "1. **Apps**\\\n   Focus.\n"


def test_the_server_s_extraction_stops_rendering_at_four_times_its_document_limit() -> None:
    from markfetch.sandbox import extract_here

    page = article_page("<h1>Long</h1>" + paragraphs(40)).encode()
    text, _title, _method = extract_here(page, "utf-8", "https://example.org/a")
    assert len(text) > 4_000
    with pytest.raises(MarkfetchError) as refused:
        extract_here(page, "utf-8", "https://example.org/a", max_bytes=1_000)
    assert refused.value.code == ErrorCode.TOO_LARGE
