"""Load the article-extraction benchmark's layout: ``html/<sha256>.html.gz`` and ``ground-truth.json``."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path


class DataError(Exception):
    """The folder does not hold the benchmark's layout; the message says what is missing."""


@dataclass(frozen=True)
class Page:
    key: str  # the sha256 the benchmark names the page by
    url: str
    html: str
    article_body: str  # the ground truth

    @property
    def split(self) -> str:
        """A stable half of the pages ("A" or "B"), to develop on one and check on the other."""
        return "A" if int(hashlib.sha256(f"split:{self.key}".encode()).hexdigest(), 16) % 2 == 0 else "B"


def load_pages(folder: str | Path, *, limit: int | None = None) -> list[Page]:
    """All pages of ``folder`` in key order (the HTML is UTF-8, as the benchmark's own runners read it)."""
    root = Path(folder).expanduser()
    truth_file = root / "ground-truth.json"
    if not root.is_dir():
        raise DataError(
            f"{root} is not a folder; pass the benchmark folder (with html/ and ground-truth.json)"
        )
    if not truth_file.is_file():
        raise DataError(f"{truth_file} is missing; is {root} a checkout of the article-extraction benchmark?")
    try:
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{truth_file} is not readable JSON ({type(exc).__name__})") from None
    if not isinstance(truth, dict) or not truth:
        raise DataError(f"{truth_file} should map page hashes to {{url, articleBody}}")
    pages: list[Page] = []
    for key in sorted(truth)[:limit]:
        entry = truth[key]
        html_file = root / "html" / f"{key}.html.gz"
        try:
            html = gzip.decompress(html_file.read_bytes()).decode("utf-8", "replace")
        except FileNotFoundError:
            raise DataError(f"{html_file} is missing (listed in ground-truth.json)") from None
        except (OSError, EOFError) as exc:
            raise DataError(f"{html_file} is not a readable gzip file ({type(exc).__name__})") from None
        pages.append(
            Page(
                key=key,
                url=str(entry.get("url", "")),
                html=html,
                article_body=str(entry.get("articleBody") or ""),
            )
        )
    return pages
