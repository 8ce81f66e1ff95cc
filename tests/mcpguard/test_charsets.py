"""Charset labels read as the WHATWG Encoding Standard reads them; any other name is unknown."""

from __future__ import annotations

import pytest

from docab_mcpguard.charsets import WEB_CODECS, web_codec


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("UTF-8", "utf-8"),
        (" 'utf8' ", "utf-8"),
        ("ISO-8859-1", "cp1252"),  # what pages labelled Latin-1 are written in
        ("us-ascii", "cp1252"),
        ("Shift_JIS", "cp932"),
        ("gb2312", "gb18030"),
        ("big5", "big5hkscs"),
        ("euc-kr", "cp949"),
        ("windows-874", "cp874"),
        ("iso-8859-8-i", "iso8859-8"),
        ("x-mac-cyrillic", "mac-cyrillic"),
        ("utf-16", "utf-16-le"),
        ("unicodefffe", "utf-16-be"),
        ("koi8-u", "koi8-u"),
    ],
)
def test_web_labels_name_the_codec_a_browser_uses(label: str, codec: str) -> None:
    assert web_codec(label) == codec


@pytest.mark.parametrize(
    "label",
    [None, "", "no-such-charset", "undefined", "idna", "punycode", "utf-7", "rot13", "base64", "zlib",
     "unicode_escape", "raw_unicode_escape", "utf-32", "cp037", "mbcs", "palmos"],
)  # fmt: skip
def test_names_only_python_knows_are_unknown(label: str | None) -> None:
    assert web_codec(label) is None


def test_every_web_codec_round_trips_ascii_markup() -> None:
    for codec in WEB_CODECS:
        assert "<p>plain</p>".encode(codec).decode(codec) == "<p>plain</p>"
