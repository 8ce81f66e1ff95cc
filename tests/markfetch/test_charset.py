"""Decoding: BOM, then Content-Type charset, then <meta>, then detection; never mojibake."""

from __future__ import annotations

import codecs

import pytest

from markfetch.charset import codec_for, decode_html, decode_text, meta_charset
from tests.markfetch.pages import SHIFT_JIS_TEXT, WINDOWS_1252_TEXT


def html(text: str, meta: str = "") -> str:
    return f"<html><head>{meta}</head><body><p>{text}</p></body></html>"


def test_header_charset_wins() -> None:
    body = html(WINDOWS_1252_TEXT).encode("cp1252")
    decoded = decode_html(body, "windows-1252")
    assert WINDOWS_1252_TEXT in decoded.text and decoded.source == "header"


def test_latin1_label_means_windows_1252() -> None:
    # Browsers decode iso-8859-1 as windows-1252: curly quotes and the euro sign survive.
    assert WINDOWS_1252_TEXT in decode_html(html(WINDOWS_1252_TEXT).encode("cp1252"), "ISO-8859-1").text


@pytest.mark.parametrize(
    "meta",
    ['<meta charset="shift_jis">', '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'],
)
def test_meta_charset_when_the_header_has_none(meta: str) -> None:
    decoded = decode_html(html(SHIFT_JIS_TEXT, meta).encode("cp932"), None)
    assert SHIFT_JIS_TEXT in decoded.text and decoded.source == "meta"


def test_detection_when_nothing_is_declared() -> None:
    body = html(SHIFT_JIS_TEXT * 3).encode("cp932")
    decoded = decode_html(body, None)
    assert SHIFT_JIS_TEXT in decoded.text and decoded.source == "detected"


def test_a_wrong_declaration_is_skipped() -> None:
    body = html(SHIFT_JIS_TEXT, '<meta charset="shift_jis">').encode("cp932")
    assert SHIFT_JIS_TEXT in decode_html(body, "utf-8").text  # the header lies; the meta is right


def test_utf8_page_under_a_legacy_server_default_is_utf8() -> None:
    body = html("café – naïve").encode("utf-8")
    assert "café – naïve" in decode_html(body, "iso-8859-1").text


def test_bom_beats_everything() -> None:
    body = codecs.BOM_UTF8 + html("café").encode("utf-8")
    decoded = decode_html(body, "windows-1252")
    assert decoded.source == "bom" and "café" in decoded.text and not decoded.text.startswith("\ufeff")


def test_unknown_labels_and_meta_scan() -> None:
    assert codec_for("no-such-charset") is None
    assert codec_for("UTF-16") == "utf-8"  # a label in ASCII bytes cannot be right
    assert meta_charset(b'<meta charset="EUC-JP">') == "EUC-JP"
    assert meta_charset(b"<p>nothing</p>") is None


def test_raw_text_decoding() -> None:
    assert decode_text("naïve".encode("cp1252"), "windows-1252") == "naïve"
    assert decode_text('{"a": "é"}'.encode()) == '{"a": "é"}'


# Python's codec registry knows names no browser does, some hostile: "undefined" and "idna" raise
# on any input, "punycode" decodes in quadratic time, "utf-7" turns "+ADw-" into "<", "rot13" and
# "base64" are no text encodings. A page naming one names no encoding: detection decides.
HOSTILE_LABELS = ["undefined", "idna", "punycode", "utf-7", "rot13", "base64", "unicode_escape", "utf-32"]


@pytest.mark.parametrize("label", HOSTILE_LABELS)
def test_a_label_that_names_no_web_encoding_is_unknown(label: str) -> None:
    assert codec_for(label) is None
    body = html("Café au lait +ADw-b+AD4-").encode()
    for header, meta in ((label, ""), (None, f"<meta charset={label}>")):
        decoded = decode_html(html("Café au lait +ADw-b+AD4-", meta).encode() if meta else body, header)
        assert decoded.encoding == "utf-8" and "Café au lait +ADw-b+AD4-" in decoded.text
    assert decode_text("Café".encode(), label) == "Café"


def test_every_web_encoding_label_still_decodes_as_a_browser_would() -> None:
    for label, codec in [
        ("windows-874", "cp874"),
        ("x-mac-cyrillic", "mac-cyrillic"),
        ("iso-8859-8-i", "iso8859-8"),
        ("koi8-u", "koi8-u"),
        ("gbk", "gb18030"),
        ("EUC-KR", "cp949"),
        ("iso-2022-jp", "iso2022_jp"),
        ("unicode", "utf-8"),  # UTF-16 by its label, but a label in ASCII bytes cannot be right
    ]:
        assert codec_for(label) == codec
