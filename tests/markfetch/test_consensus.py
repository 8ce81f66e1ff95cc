"""The second opinion on where the article ends (markfetch.consensus), unit and end to end."""

from __future__ import annotations

from lxml import etree, html

from markfetch.consensus import reading_blocks, second_opinion_text, trim_unshared_tail
from markfetch.extract import extract_article
from markfetch.htmlprep import parse_html
from markfetch.markdown import html_to_markdown
from markfetch.shingles import shingles
from tests.markfetch.pages import article_page, paragraphs

URL = "https://example.org/news/2024/harbour.html"
BOILERPLATE = (
    "<p>Acme is a global provider of harbour logistics software. Acme is headquartered in Basel and "
    "employs around 1,300 people in 15 countries; its shares are listed on the SIX Swiss Exchange.</p>"
)


_SUBJECTS = ("ferry", "trawler", "tug", "schooner", "barge", "yacht")
_CARGO = ("oranges", "timber", "coal", "wine", "salt", "copper")
_TIMES = ("dawn", "noon", "dusk", "midnight", "sunrise", "teatime")


def sentence(i: int) -> str:
    """Six sentences that share no run of four words."""
    return f"The {_SUBJECTS[i]} sailed at {_TIMES[i]}; {_CARGO[i]} filled hold {i} completely."


def container(*blocks: str) -> etree._Element:
    return html.fragment_fromstring("".join(blocks), create_parent="div")


def reference(*texts: str):
    return shingles(" ".join(texts))


ARTICLE = [f"<p>{sentence(i)}</p>" for i in range(6)]


# -- end to end -----------------------------------------------------------------------------------


def test_a_trailing_block_that_readability_leaves_out_is_cut_but_the_same_block_mid_article_stays() -> None:
    ending = article_page(f"<div class='story'>{paragraphs(6)}</div><div class='remark'>{BOILERPLATE}</div>")
    body = extract_article(ending, URL).body
    assert "Acme" not in body
    assert "scraps number 5" in body

    middle = article_page(
        f"<div class='story'>{paragraphs(3)}</div><div class='remark'>{BOILERPLATE}</div>"
        f"<div class='story'>{paragraphs(3, topic='market')}</div>"
    )
    assert "Acme is headquartered" in extract_article(middle, URL).body


def test_an_article_ending_in_a_quote_or_a_code_example_keeps_its_ending() -> None:
    quoted = article_page(
        f"<div class='story'>{paragraphs(6)}</div>"
        "<div class='remark'><blockquote>The harbour master said the season was the best in a decade, "
        "and that the new quay would open in spring.</blockquote></div>"
    )
    assert "best in a decade" in extract_article(quoted, URL).body
    example = article_page(
        f"<div class='story'>{paragraphs(6)}</div>"
        "<div class='extra'><pre><code class='language-python'>import harbour\nharbour.sail(boats=3)</code></pre></div>"
    )
    assert "harbour.sail(boats=3)" in extract_article(example, URL).body


# -- the cut and its guards -----------------------------------------------------------------------


def test_the_unshared_tail_is_removed_and_returned() -> None:
    box = container(*ARTICLE, "<p>Follow us for more harbour news every morning.</p>")
    cut = trim_unshared_tail(box, reference(*(sentence(i) for i in range(6))))
    assert [" ".join(block.itertext()) for block in cut] == ["Follow us for more harbour news every morning."]
    assert len(box) == 6


def test_nothing_is_cut_when_the_extractors_disagree_on_the_body() -> None:
    box = container(*ARTICLE, "<p>Follow us for more harbour news every morning.</p>")
    # The second opinion misses two of the six paragraphs before the tail: the two do not agree
    # on what the article is, so neither is trusted on where it ends.
    assert trim_unshared_tail(box, reference(*(sentence(i) for i in (0, 2, 4, 5)))) == []
    assert len(box) == 7


def test_nothing_is_cut_when_the_tail_is_a_large_share_of_the_body() -> None:
    weather = (
        f"<p>Weather note {i}: winds from the {_TIMES[i]} quarter, seas {_CARGO[i]}-grey.</p>"
        for i in range(4)
    )
    box = container(*ARTICLE[:3], *weather)
    assert trim_unshared_tail(box, reference(*(sentence(i) for i in range(3)))) == []


def words(prefix: str, n: int) -> str:
    """``n`` distinct words: ``n - 3`` shingles that no other call shares."""
    return " ".join(f"{prefix}{i}" for i in range(n))


def test_the_cut_may_take_exactly_the_largest_share_and_no_more() -> None:
    kept = words("kept", 9)  # 6 shingles
    at_limit = container(f"<p>{kept}</p>", f"<p>{words('tail', 7)}</p>")  # 4 of 10 shingles: 0.4
    assert len(trim_unshared_tail(at_limit, shingles(kept))) == 1
    over = container(f"<p>{kept}</p>", f"<p>{words('tail', 8)}</p>")  # 5 of 11 shingles
    assert trim_unshared_tail(over, shingles(kept)) == []


def test_the_body_must_agree_at_least_as_much_as_the_limit() -> None:
    shared = words("shared", 12)  # 9 shingles
    tail = f"<p>{words('tail', 4)}</p>"  # 1 shingle, a small share
    at_limit = container("<p>one two three</p>", f"<p>{shared}</p>", tail)  # 9 of 10 agree: 0.9
    assert len(trim_unshared_tail(at_limit, shingles(shared))) == 1
    under = container("<p>one two three four five</p>", f"<p>{shared}</p>", tail)  # 9 of 11
    assert trim_unshared_tail(under, shingles(shared)) == []


def test_quotes_tables_and_plain_lists_stay_but_a_list_of_links_goes() -> None:
    shared = reference(*(sentence(i) for i in range(6)))
    for ending in (
        "<blockquote>We will be back next year, the captain said.</blockquote>",
        "<table><tr><td>Oranges</td><td>12 t</td></tr><tr><td>Lemons</td><td>3 t</td></tr></table>",
        "<ul><li>Unpack the crates</li><li>Check the labels</li></ul>",
        "<pre><code>harbour.sail(boats=3)</code></pre>",
    ):
        box = container(*ARTICLE, ending)
        assert trim_unshared_tail(box, shared) == [], ending
    links = container(
        *ARTICLE, "<ul><li><a href='/a'>Other story</a></li><li><a href='/b'>Another</a></li></ul>"
    )
    assert len(trim_unshared_tail(links, shared)) == 1


def test_no_reference_or_a_single_block_means_no_cut() -> None:
    assert trim_unshared_tail(container(*ARTICLE, "<p>Tail text here.</p>"), shingles("")) == []
    assert trim_unshared_tail(container("<p>Tail text here.</p>"), shingles("something else")) == []


# -- reading blocks -------------------------------------------------------------------------------


def test_a_layout_table_is_read_as_the_blocks_in_its_cells_and_renders_the_same() -> None:
    markup = (
        "<table><tr><td><h2>Harbour news</h2><p>First paragraph of the story.</p>"
        "<strong>Top stories</strong> <a href='/x'>Other story</a><p>Last paragraph.</p></td>"
        "<td><a href='/y'>Partner link</a> and text</td></tr></table>"
    )
    before = html_to_markdown(container(markup), base_url=URL)
    box = container(markup)
    blocks = reading_blocks(box)
    texts = [" ".join("".join(block.itertext()).split()) for block in blocks]
    assert texts == [
        "Harbour news",
        "First paragraph of the story.",
        "Top stories Other story",  # the inline run became a paragraph of its own
        "Last paragraph.",
        "Partner link and text",  # a cell of running text is one block
    ]
    assert [block.tag for block in blocks] == ["h2", "p", "p", "p", "td"]
    assert html_to_markdown(box, base_url=URL) == before


def test_a_data_table_is_one_block() -> None:
    box = container("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>")
    assert [block.tag for block in reading_blocks(box)] == ["table"]


# -- the second opinion ---------------------------------------------------------------------------


def test_the_second_opinion_reads_the_article_and_leaves_the_tree_alone() -> None:
    tree = parse_html(article_page(paragraphs(4) + "<script>var x = 1;</script>"))
    before = etree.tostring(tree)
    text = second_opinion_text(tree)
    assert "scraps number 3" in text
    assert etree.tostring(tree) == before


def test_a_page_without_an_article_gives_an_empty_or_whole_page_opinion_never_an_error() -> None:
    assert second_opinion_text(parse_html("<html><body></body></html>")) == ""


def test_shingles_are_case_blind_four_word_windows() -> None:
    assert shingles("One two Three four five") == shingles("one TWO three four FIVE")
    assert sum(shingles("one two three four five").values()) == 2
    assert list(shingles("just three words")) == [("just", "three", "words")]
    assert not shingles("  ")
