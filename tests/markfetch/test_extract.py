"""Reader-view extraction on fixture pages: structure, links, code, titles, fallbacks."""

from __future__ import annotations

import pytest

from markfetch import htmlprep
from markfetch.extract import (
    READER_MAX_ELEMENTS,
    Article,
    ExtractionFailed,
    drop_title_headline,
    extract_article,
    headline_texts,
    page_title,
    prune_trailing_link_clusters,
    tidy_markdown,
)
from markfetch.htmlprep import drop_scripts, parse_html
from tests.markfetch.pages import article_page, page, paragraphs

URL = "https://example.org/blog/2024/pools.html"


def test_article_keeps_content_and_drops_navigation_and_footer() -> None:
    article = extract_article(page("article"), URL)
    assert article.method == "reader"
    assert article.title == "How tide pools survive the summer"
    body = article.body
    assert "Tide pools are small worlds" in body
    assert "## Shade and shelter" in body
    for boilerplate in ("Subscribe today", "Copyright 2024", "Privacy policy", "Ten beaches to visit"):
        assert boilerplate not in body
    assert article.markdown.startswith("# How tide pools survive the summer\n\n")
    assert article.markdown.count("# How tide pools") == 1


def test_links_are_absolute_against_the_page_url() -> None:
    body = extract_article(page("article"), URL).body
    assert "[shore laboratory](https://example.org/blog/labs/shore.html)" in body


def test_base_href_is_honoured() -> None:
    html = article_page(
        paragraphs(3) + '<p>See <a href="x.html">the x page</a> for more on the harbour.</p>'
    ).replace("<head>", '<head><base href="/other/dir/">')
    assert "[the x page](https://example.org/other/dir/x.html)" in extract_article(html, URL).body


def test_gfm_table() -> None:
    body = extract_article(page("article"), URL).body
    assert "| Pool type | Peak temperature | Species count |\n|---|---|---|\n| Open | 31 °C | 12 |" in body


def test_sphinx_permalinks_and_mdn_self_links_do_not_leak_into_headings() -> None:
    markdown = extract_article(page("docs_code"), URL).markdown
    assert "¶" not in markdown
    assert "# Using the config_loader module\n" in markdown
    assert "## Installation\n" in markdown
    assert "### Notes on lists\n" in markdown  # the MDN-style <a href="#notes"> is unwrapped
    assert "#notes" not in markdown


def test_code_blocks_keep_language_hints_and_bare_pre_is_code() -> None:
    body = extract_article(page("docs_code"), URL).body
    assert "```bash\npip install config-loader\n```" in body
    assert '```python\nfrom config_loader import load_config\n\nsettings = load_config("app.toml")\n' in body
    assert "```\n$ python -m config_loader --check app.toml\nok: 3 keys, no_errors\n```" in body
    assert "```javascript\nconst answer = 42;\nconsole.log(answer);\n```" in body  # line numbers dropped


def test_inline_code_underscores_lists_tasks_and_strikethrough() -> None:
    body = extract_article(page("docs_code"), URL).body
    assert "`max_retries`" in body and "\\_" not in body
    assert "- nested items\n  1. first nested\n  2. second nested" in body
    assert "- [x] a finished task\n- [ ] an open task" in body
    assert "~~old_name~~" in body
    assert "*emphasis* and **strong** text" in body


def test_page_without_h1_gets_the_title_as_heading() -> None:
    article = extract_article(page("no_h1"), URL)
    assert article.title == "Council approves new cycle lanes"
    assert not article.body.startswith("#")
    assert article.markdown.startswith("# Council approves new cycle lanes\n\nThe city council has approved")
    assert "Share this story" not in article.markdown and "Weather" not in article.markdown


def test_client_rendered_shell_fails_extraction() -> None:
    with pytest.raises(ExtractionFailed, match="JavaScript"):
        extract_article(page("shell"), URL)


def test_listing_falls_back_to_the_whole_main_region_with_its_structure() -> None:
    article = extract_article(page("listing"), "https://example.org/releases/")
    assert article.method == "full-body"
    assert "- [Version 4.2.0](https://example.org/releases/4.2.0) 2024-05-02" in article.body
    assert "- [Version 4.0.0](https://example.org/releases/4.0.0) 2023-10-01" in article.body
    assert "Home" not in article.body and "static site generator" not in article.body


def test_a_page_too_big_for_the_reader_view_is_converted_whole_from_its_main_region() -> None:
    rows = "".join(f"<div><p>Entry {i}</p></div>" for i in range(READER_MAX_ELEMENTS // 2 + 10))
    html = f"<html><head><title>Log</title></head><body><nav>Site menu</nav><main>{rows}</main></body></html>"
    article = extract_article(html, URL)
    assert article.method == "full-body"
    assert "Entry 0\n" in article.body and f"Entry {READER_MAX_ELEMENTS // 2 + 9}" in article.body
    assert "Site menu" not in article.body


def test_the_element_limit_is_inclusive() -> None:
    html = article_page(paragraphs(6))
    elements = int(parse_html(html).xpath("count(//*)"))  # nothing here is removed by preparation
    assert extract_article(html, URL, max_elements=elements).method == "reader"
    at_most = extract_article(html, URL, max_elements=elements - 1)
    assert at_most.method == "full-body" and "scraps number 5" in at_most.body


def test_hidden_copies_of_the_article_are_ignored() -> None:
    hidden = '<div style="display: none"><p>HIDDEN COPY for crawlers only.</p></div><p hidden>ALSO HIDDEN</p>'
    body = extract_article(article_page(paragraphs(4) + hidden), URL).body
    assert "HIDDEN" not in body and "Paragraph 3 about the harbour" in body


def test_empty_and_unparsable_pages_fail() -> None:
    for html in ("", "   ", "<html><body></body></html>"):
        with pytest.raises(ExtractionFailed):
            extract_article(html, URL)


def test_xhtml_with_xml_declaration_parses() -> None:
    html = '<?xml version="1.0" encoding="utf-8"?>\n' + article_page(paragraphs(3))
    assert "Paragraph 2 about the harbour" in extract_article(html, URL).body


def test_page_title_prefers_the_single_h1_found_in_the_title() -> None:
    tree = parse_html(
        "<html><head><title>Big news - Site</title></head><body><h1>Big news</h1></body></html>"
    )
    assert page_title(tree) == "Big news"
    tree = parse_html(
        "<html><head><title>A long article title | Site name</title></head><body></body></html>"
    )
    assert page_title(tree) == "A long article title"
    assert page_title(parse_html("<html><body><p>x</p></body></html>")) == ""


def test_tidy_drops_empty_headings_but_keeps_parents_of_subsections() -> None:
    text = "## Empty\n\n## Parent\n\n### Child\n\ntext\n\n## Trailing\n"
    assert tidy_markdown(text) == "## Parent\n\n### Child\n\ntext\n"
    assert tidy_markdown("```\n# not a heading\n```\n") == "```\n# not a heading\n```\n"


def test_title_headline_is_moved_to_the_title_not_repeated() -> None:
    assert drop_title_headline("## The Title!\n\nbody\n", "The title") == "body\n"
    assert drop_title_headline("intro\n\n## The Title\n", "The title") == "intro\n\n## The Title\n"
    assert drop_title_headline("The  title.\n\nbody\n", "The title") == "body\n"
    assert drop_title_headline("## The Title\n", "The title") == "## The Title\n"
    assert Article("T", "# Own heading\n\ntext\n", "reader").markdown == "# Own heading\n\ntext\n"
    assert Article("", "text\n", "reader").markdown == "text\n"


def test_a_leading_headline_or_standfirst_goes_but_a_first_section_heading_stays() -> None:
    tree = parse_html(
        "<html><head><title>Deportees return home | Site</title>"
        '<meta name="description" content="Twenty teams have punched tickets.">'
        "</head><body><p>x</p></body></html>"
    )
    known = headline_texts(tree)
    assert known == {
        "deportees return home site",
        "deportees return home",
        "twenty teams have punched tickets",
    }
    body = "# A longer headline\n\n## Deportees return home\n\n## Twenty teams have punched tickets\n\ntext\n"
    assert drop_title_headline(body, "Other", known) == "text\n"
    overview = "## Overview\n\ntext\n\n# Later h1\n"
    assert drop_title_headline(overview, "Other", known) == overview
    assert drop_title_headline("## Overview\n\n# Deportees return home\n", "Other", known) == (
        "## Overview\n\n# Deportees return home\n"
    )


def test_a_page_hidden_behind_an_open_dialog_is_still_read() -> None:
    html = (
        "<html><head><title>Harbour news</title></head><body>"
        f'<div class="page" aria-hidden="true"><article>{paragraphs(5)}'
        '<p style="display:none">HIDDEN COPY for crawlers only.</p></article></div>'
        '<div role="dialog"><p>We use cookies.</p><button>Accept</button></div></body></html>'
    )
    article = extract_article(html, URL)
    assert article.method == "reader"
    assert "Paragraph 4 about the harbour" in article.body
    assert "HIDDEN" not in article.body


def test_content_kept_for_a_click_is_read_but_hidden_copies_still_go() -> None:
    # A product page: a short visible intro, its details in hidden tab panels and a collapsed FAQ
    # (most of its text), a carousel whose cloned slide repeats the shown one.
    slide = "<p>Free delivery on every order over fifty pounds, returns within thirty days.</p>"
    panels = {
        "materials": "The shade is spun brass over a frame of recycled steel, and the cord is braided "
        "cotton in three colours, each tested for heat from the bulb over a thousand hours.",
        "warranty": "Every lamp carries a five year warranty covering the wiring and the switch; send "
        "it back with the receipt and a repaired or new lamp is posted within a fortnight.",
        "care": "Dust the shade with a dry cloth, never a spray polish, which clouds brass within "
        "weeks; tighten the base ring once a year as the thread settles.",
    }
    html = (
        "<html><head><title>Harbour lamp</title></head><body><main><h1>Harbour lamp</h1>"
        f"{paragraphs(1, topic='lamp')}<div class='carousel'>{slide}"
        f"<div aria-hidden='true' class='clone'>{slide}</div></div>"
        f"<div role='tabpanel' hidden><p>{panels['materials']}</p></div>"
        f"<div role='tabpanel' hidden><p>{panels['warranty']}</p></div>"
        f"<details><summary>Care</summary><div style='display:none'><p>{panels['care']}</p></div></details>"
        "</main></body></html>"
    )
    tree = parse_html(html)
    htmlprep.remove_hidden(tree)
    text = " ".join(" ".join(tree.itertext()).split())
    assert all(panel in text for panel in panels.values())
    assert text.count("Free delivery on every order") == 1  # the clone was a copy
    body = " ".join(extract_article(html, URL).body.split())
    assert panels["materials"] in body and panels["warranty"] in body


def test_a_large_hidden_copy_of_the_article_still_goes() -> None:
    # Two schema.org copies for crawlers hold most of the page's text: hidden, but copies.
    copy = (
        f"<div style='display:none;' itemscope itemtype='http://schema.org/NewsArticle'>{paragraphs(4)}</div>"
    )
    html = article_page(paragraphs(4)).replace("</article>", f"</article>{copy}{copy}")
    body = extract_article(html, URL).body
    assert body.count("Paragraph 2 about the harbour") == 1


def test_hidden_furniture_on_a_page_that_shows_its_text_still_goes() -> None:
    modal = "<div class='modal' hidden><p>Sign up for the harbour newsletter and never miss a tide.</p></div>"
    html = article_page(paragraphs(5)).replace("</article>", f"</article>{modal}")
    tree = parse_html(html)
    assert htmlprep.remove_hidden(tree) == 1
    assert "newsletter" not in extract_article(html, URL).body


def test_a_short_story_on_a_page_heavy_with_links_keeps_the_reader_view() -> None:
    # The story is about 3 % of the page's text: a fragment of a listing it is not.
    menus = "".join(
        f'<li><a href="/section/{i}">Section number {i} of the site with a long name</a></li>'
        for i in range(300)
    )
    html = (
        "<html><head><title>Harbour news</title></head><body>"
        f"<div class='menu'><ul>{menus}</ul></div><div class='story'>{paragraphs(3)}</div></body></html>"
    )
    article = extract_article(html, URL)
    assert article.method == "reader"
    assert "Paragraph 2 about the harbour" in article.body
    assert "Section number" not in article.body


def test_a_header_wrapped_around_paragraphs_of_prose_is_the_article() -> None:
    html = article_page(
        f"<header><h1>Harbour news</h1><p class='standfirst'>One line of standfirst.</p>{paragraphs(3)}</header>"
    ).replace("<body>", f"<body><div class='more'>{paragraphs(4, topic='market')}</div>")
    article = extract_article(html, URL)
    assert "Paragraph 2 about the harbour" in article.body
    masthead = article_page(paragraphs(4)).replace(
        "<article>", "<header><a href='/'>Harbour Times</a> <p>Byline: A. Writer, 3 May</p></header><article>"
    )
    assert "Byline" not in extract_article(masthead, URL).body


def test_teaser_cards_with_linked_headings_go_and_article_lists_stay() -> None:
    cards = "".join(
        f"<li><a href='/story-{i}'><img src='/t{i}.png'></a><h3><a href='/story-{i}'>Other story {i}</a></h3>"
        f"<h4>Teaser line {i}</h4></li>"
        for i in range(4)
    )
    steps = "<ul><li>First <a href='/tool'>fetch the tool</a>, then unpack it</li><li>Second step of the recipe</li></ul>"
    # Inside the article container, where the reader view alone keeps them (as on news sites).
    latest = f"<div><span>Our latest stories</span><ul>{cards}</ul></div>"
    html = article_page(steps + paragraphs(4) + latest)
    body = extract_article(html, URL).body
    assert "Paragraph 3 about the harbour" in body and "fetch the tool" in body and "Second step" in body
    assert "Other story" not in body and "Teaser line" not in body


def test_list_items_headed_by_permalinked_headings_are_steps_not_teasers() -> None:
    steps = "".join(
        f"<li><h3>Step {i}<a class='headerlink' href='#s{i}'>¶</a></h3><p>Run the installer for part {i}.</p></li>"
        for i in range(3)
    )
    anchored = "".join(
        f"<li><h3><a href='#t{i}'>Topic {i}</a></h3><p>Details of topic {i}.</p></li>" for i in range(2)
    )
    body = extract_article(article_page(paragraphs(3) + f"<ol>{steps}</ol><ul>{anchored}</ul>"), URL).body
    assert "Run the installer for part 2." in body and "Step 2" in body and "¶" not in body
    assert "Details of topic 1." in body


def test_the_heading_that_labels_a_list_of_teaser_cards_goes_with_it() -> None:
    cards = "".join(f"<li><h4><a href='/story-{i}'>Other story {i}</a></h4></li>" for i in range(2))
    middle = f"<h4>More from us:</h4><ul>{cards}</ul>"
    html = article_page(paragraphs(2) + middle + paragraphs(3, topic="market"))
    body = extract_article(html, URL).body
    assert "More from us" not in body and "Other story" not in body
    assert "Paragraph 2 about the market" in body
    labelled_steps = article_page(paragraphs(2) + "<h4>Steps:</h4><ul><li>Unpack</li><li>Run</li></ul>")
    assert "#### Steps:" in extract_article(labelled_steps, URL).body


def test_sign_up_boxes_and_share_bars_go_but_a_misnamed_article_container_stays() -> None:
    furniture = (
        "<div class='Newsletter-container'><h3>Pick Six Newsletter</h3><p>Get the best picks daily.</p></div>"
        "<div id='socialShareBar'><p>Share this story with your friends today</p></div>"
        "<div class='article-cta'><p>If you enjoyed this article, join our members' club.</p></div>"
    )
    html = article_page(paragraphs(3) + furniture + paragraphs(2, topic="market"))
    body = extract_article(html, URL).body
    assert "Paragraph 2 about the harbour" in body and "Paragraph 1 about the market" in body
    assert "Newsletter" not in body and "Share this story" not in body and "members' club" not in body
    notice = (
        "<div class='print-header'><p>This copy is for your personal, non-commercial use only. To order"
        " presentation-ready copies for distribution, visit our reprints desk.</p></div>"
    )
    printable = extract_article(article_page(notice + paragraphs(4)), URL).body
    assert "reprints" not in printable and "Paragraph 3 about the harbour" in printable
    wrapped = article_page(f"<div class='article-body social-enabled'>{paragraphs(4)}</div>")
    assert "Paragraph 3 about the harbour" in extract_article(wrapped, URL).body


def test_small_print_is_not_the_article_but_the_text_around_it_is() -> None:
    fine_print = (
        "<p><small>05/10/2018 - Published by: A. Writer - Category: Health</small> Lead sentence.</p>"
    )
    body = extract_article(article_page(fine_print + paragraphs(4)), URL).body
    assert "Published by" not in body
    assert "Lead sentence." in body and "Paragraph 3 about the harbour" in body
    phrase = "<p>The gauge reads 5 <small>mm</small> of rain on the harbour wall each night.</p>"
    assert "5 mm of rain" in extract_article(article_page(phrase + paragraphs(4)), URL).body


def test_microdata_dates_are_metadata_but_a_container_misusing_the_property_stays() -> None:
    dated = '<span itemprop="datePublished">Friday, 22 October 2010 at 20:13</span>' + paragraphs(4)
    body = extract_article(article_page(dated), URL).body
    assert "October 2010" not in body and "Paragraph 3 about the harbour" in body
    wrapped = article_page(f'<div itemprop="dateModified">{paragraphs(4)}</div>')
    assert "Paragraph 3 about the harbour" in extract_article(wrapped, URL).body


def test_a_typed_rule_near_the_end_cuts_the_coda_but_a_section_break_stays() -> None:
    coda = "<p>___</p><p>Follow our full coverage of the harbour at https://example.org/harbour</p>"
    body = extract_article(article_page(paragraphs(4) + coda), URL).body
    assert "Paragraph 3 about the harbour" in body
    assert "full coverage" not in body and "___" not in body
    scene_break = paragraphs(3) + "<p>* * *</p>" + paragraphs(3, topic="market")
    assert "Paragraph 2 about the market" in extract_article(article_page(scene_break), URL).body


def test_the_trailing_link_cluster_is_cut_inside_a_wrapper_around_the_whole_body() -> None:
    from lxml import etree

    prose = "<p>" + "The harbour reopened after the storm and the boats came back. " * 5 + "</p>"
    cluster = (
        "<p>Tag: <a href='/t'>harbours</a></p><p><a href='/guide'>Buyer's guide: boats (buy now)</a></p>"
    )
    body = etree.fromstring(f"<body><div class='content'>{prose}{cluster}</div></body>")
    text = "".join(prune_trailing_link_clusters(body).itertext())
    assert "harbour reopened" in text and "Buyer's guide" not in text and "Tag:" not in text


def test_adjacent_runs_of_the_same_emphasis_render_as_one_span() -> None:
    from markfetch.markdown import html_to_markdown, merge_split_emphasis

    split = parse_html("<p><b>Five tips for game d</b><b>ay parties</b> and <em>a</em> <em>b</em></p>")
    paragraph = merge_split_emphasis(split.find(".//body/p"))
    assert html_to_markdown(paragraph).strip() == "**Five tips for game day parties** and *a* *b*"
    nested = parse_html("<p><strong>one <em>two</em></strong><strong> three</strong><em>four</em></p>")
    paragraph = merge_split_emphasis(nested.find(".//body/p"))
    assert [child.tag for child in paragraph] == ["strong", "em"]
    assert "".join(paragraph.itertext()) == "one two threefour"
    page = article_page("<p><b>Five tips for game d</b><b>ay parties</b></p>" + paragraphs(4))
    assert "**Five tips for game day parties**" in extract_article(page, URL).body


def test_a_long_run_of_touching_emphasis_merges_whole_with_children_and_tails_in_order() -> None:
    """The merge joins each run's text once (it had concatenated piece by piece: quadratic, minutes
    on a 5 MB page of ``<i>x</i>``; see tests/perf/test_markfetch_perf.py)."""
    from markfetch.markdown import merge_split_emphasis

    runs = "".join(f"<b>{i} <code>c{i}</code> t{i} </b>" for i in range(2_000))
    paragraph = merge_split_emphasis(parse_html(f"<p>{runs}<b>end</b>after</p>").find(".//body/p"))
    assert [child.tag for child in paragraph] == ["b"] and paragraph[0].tail == "after"
    assert len(paragraph[0]) == 2_000
    assert "".join(paragraph.itertext()) == "".join(f"{i} c{i} t{i} " for i in range(2_000)) + "endafter"


def test_scripts_and_styles_go_before_extraction_but_json_ld_and_the_text_around_them_stay() -> None:
    tree = parse_html(
        "<html><head><style>p {color: red}</style>"
        '<script type=" Application/LD+JSON ">{"articleBody": "kept"}</script></head>'
        "<body><p>Before <script>track()</script>after.</p><script src='x.js'></script></body></html>"
    )
    drop_scripts(tree)
    assert tree.xpath("string(//p)") == "Before after."
    assert [s.get("type").strip().lower() for s in tree.iter("script")] == ["application/ld+json"]
    assert not list(tree.iter("style"))


# -- the article's own H1 is the title (issue 18) ------------------------------------------------


@pytest.mark.parametrize(
    ("title", "h1"),
    [
        ("Site name", "json — JSON encoder and decoder"),
        ("Notes | Example blog", "Tuning the ferry timetable for winter"),
        ("Multibyte Test", "Café — résumé — façade · Москва"),
    ],
)
def test_the_articles_own_h1_is_kept_when_the_title_element_differs(title: str, h1: str) -> None:
    html = article_page(f"<h1>{h1}</h1>{paragraphs(3)}<h2>Details</h2>{paragraphs(2, 'quay')}", title=title)
    article = extract_article(html, URL)
    assert article.title == h1
    assert article.markdown.startswith(f"# {h1}\n\nParagraph 0 about the harbour")
    assert article.markdown.count(f"# {h1}") == 1 and title not in article.markdown
    assert "## Details" in article.markdown


def test_the_h1_is_the_title_without_its_permalink_even_outside_the_reader_view() -> None:
    # A short Sphinx page: the reader view drops its headings, the page's single <h1> still titles it.
    html = (
        "<html><head><title>Python docs</title></head><body><div class='body'>"
        "<h1>json — JSON encoder and decoder<a class='headerlink' href='#module-json'>¶</a></h1>"
        f"{paragraphs(2)}</div></body></html>"
    )
    article = extract_article(html, URL)
    assert article.title == "json — JSON encoder and decoder"
    assert article.markdown.startswith("# json — JSON encoder and decoder\n\n")


def test_a_site_name_h1_that_is_only_a_link_does_not_title_the_article() -> None:
    tree = parse_html(
        "<html><head><title>Winter timetable for the ferries | Harbour news</title></head><body>"
        "<h1><a href='/'>Harbour news</a></h1><h2>Winter timetable for the ferries</h2></body></html>"
    )
    assert page_title(tree) == "Winter timetable for the ferries"
    tree = parse_html(
        "<html><head><title>Big news - Site</title></head><body><h1><a href='/x'>Big news</a></h1>"
    )
    assert page_title(tree) == "Big news"  # a linked headline the document title confirms


def test_the_title_is_not_repeated_when_the_body_holds_it_as_an_h1_after_a_kicker() -> None:
    body = "[Tech](https://example.org/tech)\n\n# Big *launch* today\n\ntext\n"
    assert Article("Big launch today", body, "reader").markdown == body
    assert Article("Other", "intro\n\n# Big launch today\n", "reader").markdown.startswith("# Other\n\nintro")


def test_visible_text_counts_what_a_reader_sees_once_per_text_run() -> None:
    tree = parse_html(
        "<html><head><title>T</title><style>p { color: red }</style></head><body>"
        '<p>  Tide   pools\n dry </p><script type=\'application/ld+json\'>{"articleBody": "x y"}</script>'
        "tail after the script<noscript><img src='a.png'>enable JavaScript</noscript>"
        "<template>later</template><b>a</b><i>b</i></body></html>"
    )
    # "Tide pools dry" 14, "tail after the script" 21, "a" 1, "b" 1: the script, the noscript
    # (its text around a child too) and the template add nothing, nor does the head's style.
    assert htmlprep.visible_text_length(tree) == 14 + 21 + 1 + 1
    paragraph = tree.find(".//p")
    assert htmlprep.visible_text_length(paragraph) == 14
    script = tree.find(".//script")
    assert htmlprep.visible_text_length(script) == 0


def test_visible_text_counts_adjacent_text_nodes_of_a_script_apart() -> None:
    from lxml import etree

    # strip_tags leaves "Enable ", "your", " JavaScript" as three text nodes of the noscript.
    tree = parse_html("<html><body><noscript>Enable <b>your</b> JavaScript</noscript><p>x</p></body></html>")
    etree.strip_tags(tree, "b")
    assert htmlprep.visible_text_length(tree) == 1


@pytest.mark.parametrize("name", sorted(htmlprep._LINE_NUMBERS))
def test_every_line_number_gutter_class_is_dropped(name: str) -> None:
    tree = parse_html(
        f"<html><body><div class='code {name}'>1\n2\n3</div><pre>print('tide')</pre></body></html>"
    )
    htmlprep.normalise_code_blocks(tree)
    assert tree.find(f".//div[@class='code {name}']") is None
    assert "print('tide')" in "".join(tree.itertext())


@pytest.mark.parametrize(
    ("style", "hidden"),
    [
        ("display:none", True),
        ("DISPLAY: None !important", True),
        ("color: red; Visibility : HIDDEN;", True),
        ("border: none; overflow: hidden", False),  # says "none" and "hidden", hides nothing
        ("display: nonE-block", False),
        ("d\u0131splay: none", False),  # a dotless i: no CSS property, so the browser shows it
        ("display:\u00a0none", False),  # a no-break space is no CSS whitespace: an invalid value
    ],
)
def test_a_style_hides_as_css_reads_it(style: str, hidden: bool) -> None:
    tree = parse_html(
        f"<html><body><p>{'Shown text of the page. ' * 20}</p><p style='{style}'>STYLED</p></body></html>"
    )
    assert htmlprep.remove_hidden(tree) == int(hidden)
    assert ("STYLED" in "".join(tree.itertext())) is not hidden


def test_task_boxes_are_marked_in_list_items_only_whatever_the_type_case() -> None:
    tree = parse_html(
        "<html><body><ul><li><input type='CheckBox' checked> done</li><li><input type='checkbox'> open</li>"
        "</ul><p><input type='checkbox'> not in a list</p></body></html>"
    )
    htmlprep.mark_task_items(tree)
    items = ["".join(li.itertext()) for li in tree.iter("li")]
    assert items == [f"{htmlprep.TASK_DONE} done", f"{htmlprep.TASK_OPEN} open"]
    assert tree.find(".//p/input") is not None


def test_a_layout_section_named_gutter_is_no_line_number_gutter() -> None:
    # Grid frameworks call a spaced section a "gutter"; a page's whole content can sit in one.
    html = article_page(paragraphs(3)).replace(
        "<article>", "<article><section class='gutter section-wrapper'>"
    )
    html = html.replace("</article>", "</section></article>")
    tree = parse_html(html)
    htmlprep.normalise_code_blocks(tree)
    assert "Paragraph 2 about the harbour" in "".join(tree.itertext())
    assert "Paragraph 2 about the harbour" in extract_article(html, URL).body


def test_utility_classes_under_a_variant_prefix_name_no_furniture() -> None:
    # Tailwind's print:break-inside-avoid styles a paragraph for paper; it is no "print" widget.
    prose = "".join(
        f"<p class='max-w-3xl print:break-inside-avoid'>Paragraph {i} about the harbour and its tides, "
        "long enough to be read as prose by any reader view.</p>"
        for i in range(4)
    )
    box = "<div class='newsletter'><p>Sign up for the harbour newsletter.</p></div>"
    tree = parse_html(f"<html><body><article>{prose}{box}</article></body></html>")
    htmlprep.drop_furniture(tree)
    text = "".join(tree.itertext())
    assert text.count("about the harbour and its tides") == 4
    assert "Sign up" not in text


def test_a_line_number_gutter_with_letters_still_goes_from_code() -> None:
    tree = parse_html(
        "<html><body><pre><span class='lineno'><span class='sr-only'>Line </span>1</span>x = 1</pre></body></html>"
    )
    htmlprep.normalise_code_blocks(tree)
    assert tree.findtext(".//pre/code") == "x = 1"
