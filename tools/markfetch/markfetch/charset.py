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

from docab_mcpguard.charsets import web_codec

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
    """The Python codec for a charset label, or None when the label names no web encoding
    (:func:`docab_mcpguard.charsets.web_codec`)."""
    codec = web_codec(label)
    # A page cannot really be UTF-16 when the label sits in ASCII-compatible bytes (WHATWG rule).
    return "utf-8" if codec is not None and codec.startswith("utf-16") else codec


def meta_charset(body: bytes) -> str | None:
    """The charset declared by a ``<meta>`` tag in the first bytes, as a label."""
    match = _META_CHARSET.search(body[:_PRESCAN_BYTES])
    return match.group(1).decode("ascii", "replace") if match else None


def _strict(body: bytes, codec: str | None) -> str | None:
    if codec is None:
        return None
    try:
        return body.decode(codec)
    except (UnicodeError, LookupError):
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
    codec = codec_for(best.encoding) if best is not None else None
    text = _strict(body, codec)
    if codec is not None and text is not None:
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
    text = _strict(body, codec_for(best.encoding) if best is not None else None)
    return text if text is not None else body.decode("utf-8", "replace")
