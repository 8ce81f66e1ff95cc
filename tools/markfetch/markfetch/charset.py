"""Decode an HTML body to text the way a browser would, so no page comes out as mojibake.

Order of evidence: a byte-order mark; the charset of the Content-Type header; a ``<meta charset>``
or ``<meta http-equiv="Content-Type">`` in the first bytes; then statistical detection
(charset-normalizer); UTF-8 with replacement characters only as the very last resort. A declared
charset that does not decode the bytes is skipped rather than trusted. Labels follow the WHATWG
Encoding Standard where it differs from Python's codecs (``iso-8859-1`` is really windows-1252,
``shift_jis`` is windows-31j, ...), because that is what pages are written against.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

# WHATWG label -> Python codec where Python's own codec of that name would decode differently.
_WHATWG_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "windows-1252": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "big5": "big5hkscs",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "x-user-defined": "cp1252",
    "utf8": "utf-8",
    "unicode-1-1-utf-8": "utf-8",
}
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_SINGLE_BYTE = frozenset({"cp1252", "cp1254", "iso8859-15", "iso8859-2", "cp1250", "cp1251", "koi8-r"})
_PRESCAN_BYTES = 4096
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # the Python codec used
    source: str  # "bom", "header", "meta", "detected" or "fallback"


def codec_for(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when the label is unknown."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _WHATWG_ALIASES.get(name, name)
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    # A page cannot really be UTF-16 when the label sits in ASCII-compatible bytes (WHATWG rule).
    return "utf-8" if codec.startswith("utf-16") else codec


def meta_charset(body: bytes) -> str | None:
    """The charset declared by a ``<meta>`` tag in the first bytes, as a label."""
    match = _META_CHARSET.search(body[:_PRESCAN_BYTES])
    return match.group(1).decode("ascii", "replace") if match else None


def _strict(body: bytes, codec: str | None) -> str | None:
    if codec is None:
        return None
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_html(body: bytes, header_charset: str | None = None) -> Decoded:
    """Decode ``body``, trusting the strongest evidence that actually decodes it."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return Decoded(body[len(bom) :].decode(bom_codec, "replace"), bom_codec, "bom")
    as_utf8 = _strict(body, "utf-8")
    for source, label in (("header", header_charset), ("meta", meta_charset(body))):
        codec = codec_for(label)
        if codec in _SINGLE_BYTE and as_utf8 is not None and not body.isascii():
            # Multi-byte UTF-8 sequences almost never occur by chance in legacy text: the label
            # is a server default (Apache's iso-8859-1) on a page really written in UTF-8.
            return Decoded(as_utf8, "utf-8", source)
        text = _strict(body, codec)
        if text is not None:
            return Decoded(text, codec or "", source)
    if as_utf8 is not None:
        return Decoded(as_utf8, "utf-8", "detected")
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    if best is not None:
        codec = codec_for(best.encoding) or best.encoding
        text = _strict(body, codec)
        if text is not None:
            return Decoded(text, codec, "detected")
    return Decoded(body.decode("utf-8", "replace"), "utf-8", "fallback")


def decode_text(body: bytes, header_charset: str | None = None) -> str:
    """Decode a non-HTML body (``raw`` mode): BOM, then the header charset, then detection."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, "replace")
    text = _strict(body, codec_for(header_charset))
    if text is not None:
        return text
    text = _strict(body, "utf-8")
    if text is not None:
        return text
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    return str(best) if best is not None else body.decode("utf-8", "replace")
