"""The character encodings a web page can name, by their labels. Pure: no I/O.

A charset label comes from whoever serves the page (a ``Content-Type`` header, a ``<meta>`` tag);
Python's codec registry answers to many more names than browsers know, some hostile to a fetcher:
"undefined" and "idna" raise on any input, "punycode" decodes in quadratic time (5 MB: minutes),
"utf-7" turns "+ADw-" into "<", "rot13" and "base64" are not text encodings at all. A label is
read as the WHATWG Encoding Standard reads it, and a label it does not list is unknown here, as
it is to a browser.
"""

from __future__ import annotations

import codecs

# WHATWG label -> Python codec where Python's own codec of that name would decode differently.
WHATWG_ALIASES = {
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
    "iso-8859-8-i": "iso8859-8",
    "windows-874": "cp874",
    "x-mac-cyrillic": "mac-cyrillic",
    "utf-16": "utf-16-le",
    "unicode": "utf-16-le",
    "ucs-2": "utf-16-le",
    "csunicode": "utf-16-le",
    "iso-10646-ucs-2": "utf-16-le",
    "unicodefeff": "utf-16-le",
    "unicodefffe": "utf-16-be",
}
# The Python codecs of the Encoding Standard's encodings: a page can name no other.
WEB_CODECS = frozenset(
    {"utf-8", "utf-16-le", "utf-16-be", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic",
     "cp874", "gb18030", "big5hkscs", "euc_jp", "iso2022_jp", "cp932", "cp949"}
    | {f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)}
    | {f"cp{n}" for n in range(1250, 1259)}
)  # fmt: skip


def web_codec(label: str | None) -> str | None:
    """The Python codec a browser would decode with for a charset ``label``, or None when the
    label names no encoding of the web (the caller then detects or falls back, as browsers do).

    UTF-16 labels answer UTF-16: whether the bytes can be UTF-16 is the caller's to judge.
    """
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = WHATWG_ALIASES.get(name, name)
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    return codec if codec in WEB_CODECS else None
