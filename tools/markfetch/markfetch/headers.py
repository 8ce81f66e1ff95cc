"""One consistent Chrome request fingerprint, derived from a single User-Agent string.

Bot detectors compare the User-Agent with the client hints (``Sec-CH-UA*``) and the fetch
metadata (``Sec-Fetch-*``); a Chrome UA with missing or mismatched hints is a stronger bot signal
than curl. Everything here is derived from the one UA, so overriding it keeps the set coherent:
the brand list follows Chromium's own GREASE algorithm for the UA's major version, the platform
and mobile flag follow the UA's platform token. A UA that is not Chrome is refused, because no
coherent hint set exists for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/136.0.0.0 Safari/537.36"
)
DEFAULT_ACCEPT_LANGUAGE = "en-US,en;q=0.9"
ACCEPT_HTML = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,"
    "*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)
# Chrome's order; only the encodings the HTTP stack can decode are ever advertised.
CHROME_ENCODINGS = ("gzip", "deflate", "br", "zstd")

# Chromium-based browsers that are not Chrome carry their own brand in Sec-CH-UA.
_NOT_CHROME = re.compile(
    r"\b(Edg|EdgA|EdgiOS|OPR|OPT|SamsungBrowser|YaBrowser|UCBrowser|HeadlessChrome|CriOS)/"
)
_CHROME_VERSION = re.compile(r"\bChrome/(\d+)(?:\.\d+){0,3}\b")
# Order matters: Android UAs also say "Linux", ChromeOS UAs also say "X11".
_PLATFORMS = (
    ("Windows NT", "Windows"),
    ("Android", "Android"),
    ("CrOS", "Chrome OS"),
    ("Macintosh", "macOS"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
    ("X11", "Linux"),
)

# Chromium's GREASE brand (components/embedder_support/user_agent_utils.cc): the decoy brand's
# characters, its version and the order of the three brands all rotate with the major version.
_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")
_BRAND_ORDERS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


@dataclass(frozen=True)
class ChromeProfile:
    """The parts of a Chrome UA that the client hints must agree with."""

    user_agent: str
    major: int
    platform: str
    mobile: bool

    @classmethod
    def from_user_agent(cls, user_agent: str) -> ChromeProfile:
        """Parse a Chrome UA; raise ``ValueError`` with a readable reason for anything else."""
        ua = user_agent.strip()
        if not ua or any(ch in ua for ch in "\r\n\x00"):
            raise ValueError("the User-Agent must be one non-empty line")
        if not ua.isascii():
            raise ValueError("the User-Agent must be plain ASCII")
        other = _NOT_CHROME.search(ua)
        if other:
            raise ValueError(f"it identifies as {other.group(1)}, not Chrome; use a Chrome User-Agent")
        version = _CHROME_VERSION.search(ua)
        if version is None or "Mozilla/5.0" not in ua:
            raise ValueError(
                'it is not a Chrome User-Agent (expected "Mozilla/5.0 (...) ... Chrome/<version> ...")'
            )
        major = int(version.group(1))
        if not 1 <= major <= 999:
            raise ValueError(f"Chrome version {major} is not plausible")
        platform = next((name for token, name in _PLATFORMS if token in ua), None)
        if platform is None:
            raise ValueError(
                "its platform is unknown (expected Windows NT, Macintosh, X11/Linux, Android or CrOS)"
            )
        return cls(user_agent=ua, major=major, platform=platform, mobile=" Mobile" in ua)

    def brands(self) -> str:
        """The ``Sec-CH-UA`` value Chrome of this major version sends."""
        seed = self.major
        grease_brand = f"Not{_GREASE_CHARS[seed % len(_GREASE_CHARS)]}A{_GREASE_CHARS[(seed + 1) % len(_GREASE_CHARS)]}Brand"
        order = _BRAND_ORDERS[seed % len(_BRAND_ORDERS)]
        slots: list[tuple[str, str]] = [("", "")] * 3
        slots[order[0]] = (grease_brand, _GREASE_VERSIONS[seed % len(_GREASE_VERSIONS)])
        slots[order[1]] = ("Chromium", str(seed))
        slots[order[2]] = ("Google Chrome", str(seed))
        return ", ".join(f'"{brand}";v="{version}"' for brand, version in slots)

    def headers(self, *, accept_language: str, encodings: Iterable[str]) -> dict[str, str]:
        """The full header set of a top-level navigation typed into the address bar."""
        supported = set(encodings)
        return {
            "Sec-CH-UA": self.brands(),
            "Sec-CH-UA-Mobile": "?1" if self.mobile else "?0",
            "Sec-CH-UA-Platform": f'"{self.platform}"',
            "Upgrade-Insecure-Requests": "1",
            "User-Agent": self.user_agent,
            "Accept": ACCEPT_HTML,
            "Sec-Fetch-Site": "none",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-User": "?1",
            "Sec-Fetch-Dest": "document",
            "Accept-Encoding": ", ".join(e for e in CHROME_ENCODINGS if e in supported),
            "Accept-Language": accept_language,
        }


def decodable_encodings() -> frozenset[str]:
    """Content encodings the guarded client decodes (itself, in bounded steps)."""
    from docab_mcpguard import SUPPORTED_CODINGS

    return frozenset(SUPPORTED_CODINGS)


def validate_accept_language(value: str) -> str:
    """Accept-Language is free-form, but must be one printable ASCII line (no header injection)."""
    text = value.strip()
    if not text or not text.isascii() or any(not (32 <= ord(ch) < 127) for ch in text):
        raise ValueError("it must be one line of printable ASCII, for example 'de-DE,de;q=0.9,en;q=0.8'")
    return text
