"""The HTML -> markdown renderer on small fragments: each construct and each escaping rule."""

from __future__ import annotations

import pytest
from lxml import html

from markfetch.markdown import code_span, escape_line_start, escape_text, html_to_markdown


def md(fragment: str, **kwargs) -> str:
    return html_to_markdown(html.fragment_fromstring(fragment, create_parent="div"), **kwargs)


def test_headings_paragraphs_and_emphasis() -> None:
    out = md("<h2>Title <em>here</em></h2><p>Some <strong>bold</strong> and <i>it</i>, <del>old</del>.</p>")
    assert out == "## Title *here*\n\nSome **bold** and *it*, ~~old~~.\n"


def test_intraword_underscores_are_not_escaped_but_emphasis_like_ones_are() -> None:
    assert escape_text("list_tools and max_retries_count") == "list_tools and max_retries_count"
    assert escape_text("_private and trailing_") == "\\_private and trailing\\_"
    assert escape_text("a*b [x] `c` <div>") == "a\\*b \\[x\\] \\`c\\` \\<div>"
    assert escape_text("a < b and ~~x~~") == "a < b and \\~\\~x\\~\\~"


@pytest.mark.parametrize(
    ("line", "escaped"),
    [
        ("# not a heading", "\\# not a heading"),
        ("> not a quote", "\\> not a quote"),
        ("- not a bullet", "\\- not a bullet"),
        ("2019. A year", "2019\\. A year"),
        ("---", "\\---"),
        ("#hashtag stays", "#hashtag stays"),
        ("-5 degrees", "-5 degrees"),
    ],
)
def test_line_start_markers(line: str, escaped: str) -> None:
    assert escape_line_start(line) == escaped


def test_code_span_fences_around_backticks() -> None:
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"


def test_fenced_code_with_language_from_class_and_no_escaping() -> None:
    out = md('<pre><code class="language-python">x_y = [1, 2]  # *not* emphasis\n</code></pre>')
    assert out == "```python\nx_y = [1, 2]  # *not* emphasis\n```\n"


@pytest.mark.parametrize(
    "fragment",
    [
        '<div class="highlight-rust"><div class="highlight"><pre>fn main() {}</pre></div></div>',
        '<pre class="lang-rust">fn main() {}</pre>',
        '<pre><code class="hljs language-rust">fn main() {}</code></pre>',
        '<pre data-lang="rust">fn main() {}</pre>',
    ],
)
def test_language_hints_in_their_common_places(fragment: str) -> None:
    assert md(fragment).startswith("```rust\n")


def test_bare_pre_is_code_and_backtick_fences_grow() -> None:
    out = md("<pre>```\ninner\n```</pre>")
    assert out == "````\n```\ninner\n```\n````\n"


def test_pre_with_br_and_highlight_spans() -> None:
    out = md('<pre><span class="k">if</span> x:<br>    <span>pass</span></pre>')
    assert out == "```\nif x:\n    pass\n```\n"


def test_nested_lists_ordered_start_and_tasks() -> None:
    out = md(
        '<ol start="3"><li>three<ul><li>sub</li></ul></li><li>four</li></ol>'
        "<ul><li>\u2611 done</li><li>\u2610 open</li></ul>"
    )
    assert out == "3. three\n   - sub\n4. four\n\n- [x] done\n- [ ] open\n"


def test_list_item_with_two_paragraphs_stays_in_the_item() -> None:
    out = md("<ul><li><p>first</p><p>second</p></li><li>next</li></ul>")
    assert out == "- first\n\n  second\n- next\n"


def test_gfm_table_with_header_pipes_and_colspan() -> None:
    out = md(
        "<table><thead><tr><th>a</th><th>b</th></tr></thead>"
        '<tr><td>x|y</td><td>1</td></tr><tr><td colspan="2">wide</td></tr></table>'
    )
    assert out == "| a | b |\n|---|---|\n| x\\|y | 1 |\n| wide |  |\n"


def test_table_without_header_row_gets_an_empty_header() -> None:
    out = md("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")
    assert out.splitlines()[:2] == ["|  |  |", "|---|---|"]


def test_layout_table_of_one_column_is_plain_blocks() -> None:
    assert md("<table><tr><td><p>one</p></td></tr><tr><td>two</td></tr></table>") == "one\n\ntwo\n"


def test_links_absolute_against_base_and_unsafe_links_dropped() -> None:
    out = md(
        '<p><a href="../x.html">rel</a> <a href="/abs">root</a> <a href="#frag">frag</a> '
        '<a href="javascript:alert(1)">js</a> <a href="a b.html">space</a></p>',
        base_url="https://ex.com/docs/page/",
    )
    assert out == (
        "[rel](https://ex.com/docs/x.html) [root](https://ex.com/abs) "
        "[frag](https://ex.com/docs/page/#frag) js [space](<https://ex.com/docs/page/a b.html>)\n"
    )


def test_blockquote_and_hard_break() -> None:
    assert md("<blockquote><p>one<br>two</p><p>three</p></blockquote>") == "> one\\\n> two\n>\n> three\n"


def test_scripts_styles_and_forms_are_skipped() -> None:
    assert md("<p>keep</p><script>var x=1</script><style>p{}</style><form><input value=x></form>") == "keep\n"


def test_images_absolute_with_alt() -> None:
    assert (
        md('<p><img src="i.png" alt="a_b"></p>', base_url="https://ex.com/d/")
        == "![a_b](https://ex.com/d/i.png)\n"
    )


def test_empty_input_is_empty() -> None:
    assert md("") == ""
    assert md("<p>  </p>") == ""


def test_block_content_in_table_cells_keeps_every_word_on_br_separated_lines() -> None:
    # The reader view drops lists inside cells; the preparation makes them lines of the cell, and
    # the renderer joins a cell's lines with <br> (GitHub renders it as a line break in a table).
    from markfetch.htmlprep import inline_table_cells

    tree = html.fromstring(
        "<div><table><tr><th>JSON</th><th>Python</th></tr>"
        "<tr><td>object</td><td><ul><li>dict</li><li>OrderedDict (with <code>object_pairs_hook</code>)</li></ul></td></tr>"
        "<tr><td>steps</td><td><ol start='3'><li>unpack<ul><li>into <em>/opt</em></li></ul></li><li>a | b</li></ol></td></tr>"
        "<tr><td>text</td><td><p>str</p>or bytes<br>when raw</td></tr></table></div>"
    )
    inline_table_cells(tree)
    assert html_to_markdown(tree).splitlines() == [
        "| JSON | Python |",
        "|---|---|",
        "| object | • dict<br>• OrderedDict (with `object_pairs_hook`) |",
        "| steps | 3\\. unpack<br>• into */opt*<br>4\\. a \\| b |",
        "| text | str<br>or bytes<br>when raw |",
    ]


def test_layout_tables_and_cells_with_headings_keep_their_blocks() -> None:
    from markfetch.htmlprep import inline_table_cells

    tree = html.fromstring(
        "<div><table><tr><td><h2>Story</h2><p>One.</p><ul><li>a</li></ul></td><td><p>Side</p></td></tr></table></div>"
    )
    inline_table_cells(tree)
    assert html_to_markdown(tree) == "## Story\n\nOne.\n\n- a\n\nSide\n"
