"""The viewer's files as text: ``index.html`` (one self-contained page) and one script per transcript.

Pure string building. The page's CSS and JavaScript live in ``assets/`` next to this module and are
inlined; the data is embedded as JSON in ``<script type="application/json">``. JSON text is made
safe for an HTML ``<script>`` element by escaping ``<``, ``>`` and ``&`` (and the two line
separators JavaScript once treated as newlines) as ``\\uXXXX``: a transcript holding
``</script><img onerror=...>`` stays a string and cannot end the element. The page's Content
Security Policy allows only its own inline script and style (by hash) and files beside it, so
even an injected handler would not run; the script draws data with ``textContent`` only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib import resources
from typing import Any

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def embed_json(data: Any) -> str:
    """JSON text that is also safe inside an HTML ``<script>`` element and as a JavaScript literal."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).translate(
        _JSON_ESCAPES
    )


@cache
def asset(name: str) -> str:
    return resources.files("docab.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_index(index: dict[str, Any]) -> str:
    """The whole page: ``index`` (``docab.viewer.page.build_index``) embedded, CSS and JS inlined."""
    style, script = asset("viewer.css"), asset("viewer.js")
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_hash(script)} file:",  # the inline viewer, and transcripts/<n>.js
            f"style-src {_csp_hash(style)}",
            "img-src file: data:",  # ../plots and ../images
        ]
    )
    return "".join(
        [
            '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy, quote=False)}">\n',
            f"<title>{html.escape(index.get('title') or 'docab run')} · docab viewer</title>\n",
            f"<style>{style}</style>\n</head>\n<body>\n",
            '<div id="app"><noscript>The docab viewer needs JavaScript.</noscript></div>\n',
            f'<script type="application/json" id="docab-data">{embed_json(index)}</script>\n',
            f"<script>{script}</script>\n</body>\n</html>\n",
        ]
    )


def transcript_script(number: int, view: dict[str, Any]) -> str:
    """``transcripts/<number>.js``: hands one transcript to the page when the page loads it."""
    return f"docabTranscriptLoaded({int(number)},{embed_json(view)});\n"
