"""The cmark-gfm binding: options, memory, threads, and a clear error when it cannot load."""

from __future__ import annotations

import resource
from concurrent.futures import ThreadPoolExecutor

import pytest

from md_vision import parser
from md_vision.document import parse_document
from tests.md_vision.conftest import SAMPLES


def test_option_bits_match_cmarkgfm() -> None:
    from cmarkgfm.cmark import Options

    assert parser.CMARK_OPT_SOURCEPOS == Options.CMARK_OPT_SOURCEPOS
    assert parser.CMARK_OPT_VALIDATE_UTF8 == Options.CMARK_OPT_VALIDATE_UTF8


def test_xml_has_block_positions_and_escapes_the_document_text() -> None:
    xml = parser.markdown_to_xml("| a |\n|---|\n| <b>x</b> |\n\n## H\n").decode()
    assert '<table sourcepos="1:1-3:12">' in xml  # GFM tables are on
    assert "&lt;b&gt;" in xml and "<b>" not in xml
    assert '<heading sourcepos="5:1-5:4" level="2">' in xml


def test_repeated_parses_do_not_leak() -> None:
    # cmarkgfm's own helpers never free the output string nor, with extensions, the syntax tree.
    text = (SAMPLES / "guide.md").read_text(encoding="utf-8") * 200
    parser.markdown_to_xml(text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(40):
        parser.markdown_to_xml(text)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 40, f"peak memory grew by {grown_mb:.0f} MB over 40 parses"


def test_threads_parse_independently() -> None:
    texts = [f"# Doc {n}\n\n" + "para ![i](i.png)\n\n## Part\n" * (n + 1) for n in range(40)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(parse_document, texts))
    assert threaded == [parse_document(text) for text in texts]


def test_text_that_is_not_valid_utf8_still_parses() -> None:
    document = parse_document("# caf\udce9\n\x00 text\n")
    assert [h.line for h in document.headings] == [1] and document.line_count == 2


def test_a_missing_or_broken_library_gives_advice() -> None:
    with pytest.raises(parser.ParserUnavailable, match="not installed: reinstall"):
        parser._load("no_such_package._cmark")
    with pytest.raises(parser.ParserUnavailable, match="cannot be used"):
        parser._load("json")  # exists, but is no shared library
