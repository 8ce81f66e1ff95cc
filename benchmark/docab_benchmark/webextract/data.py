"""Load an extraction benchmark folder into typed pages, whichever of two public layouts it has.

- **article-extraction** (scrapinghub/article-extraction-benchmark): ``html/<key>.html.gz`` and
  ``ground-truth.json``, mapping each key to ``{"url", "articleBody"}``. Entries may also carry
  ``"with"`` and ``"without"`` sentence lists (the web-content-extraction benchmark's release
  folder uses this layout with them).
- **web-content-extraction** (tiptopjaw/web-content-extraction-benchmark, pages of 2025-2026 with
  AI-made ground truth): one JSON file per page in ``ground-truth/`` (or ``benchmark/ground-truth/``
  in a checkout of the repository), ``{"url", "ground_truth": {"main_content", "with",
  "without"}}``, and the HTML as ``html/<key>.html.gz`` (or ``release/html/``, ``benchmark/html/``).
- **WCXB** (Murrough-Foley/web-content-extraction-benchmark, the human-reviewed release of the
  same schema, with seven labelled page types): the same per-page files under ``dev/`` and
  ``test/``, each with ``ground-truth/`` and ``html/``. Its dev pages are largely the
  web-content-extraction benchmark's pages; its 511 test pages are in neither other set.

Every page falls in one of two stable parts: the **dev** part, to develop on, and the
**validation** part, to check on. Where the publisher holds a test set out (WCXB), its split is
kept: dev is its dev set, validation its test set. Elsewhere a hash of the page's key decides,
fixed before anyone looks at a page, so a set brought in later splits the same way on every machine.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Part = Literal["dev", "validation"]
Layout = Literal["article-extraction", "web-content-extraction", "wcxb"]
# The publisher's split folders of a WCXB checkout, and the part each one is.
WCXB_SPLITS: dict[str, Part] = {"dev": "dev", "test": "validation"}


class DataError(Exception):
    """The folder does not hold a benchmark layout; the message says what is missing."""


@dataclass(frozen=True)
class Page:
    key: str  # the name the benchmark gives the page (a sha256, or a file number)
    url: str
    html: str
    article_body: str  # the ground truth
    must_contain: tuple[str, ...] = ()  # sentences a good extraction keeps ("with")
    must_not_contain: tuple[str, ...] = ()  # boilerplate it leaves out ("without")
    page_type: str = ""  # the set's label for the page ("article", "forum", ...), where it has one
    given_part: Part | None = None  # the publisher's split, where it holds a test set out

    @property
    def split(self) -> str:
        """A stable half of the pages ("A" or "B"), to develop on one and check on the other."""
        return "A" if int(hashlib.sha256(f"split:{self.key}".encode()).hexdigest(), 16) % 2 == 0 else "B"

    @property
    def part(self) -> Part:
        """The publisher's part where it gives one, else ``dev`` (half A) or ``validation`` (half B)."""
        if self.given_part is not None:
            return self.given_part
        return "dev" if self.split == "A" else "validation"


@dataclass(frozen=True)
class PageSet:
    """The pages of one benchmark folder, and which layout they came in."""

    folder: Path
    layout: Layout
    pages: list[Page]
    unpaired: tuple[
        str, ...
    ] = ()  # ground-truth files without their HTML, left out (as the benchmark's runner does)
    # WCXB: files of dev/ whose page is also in test/, left out of dev. The publisher's metadata
    # puts 139 such pages in test (their HTML is the same, their ground truth an older draft).
    duplicates: tuple[str, ...] = ()

    @property
    def ai_ground_truth(self) -> bool:
        """The ground truth was written by a model (the web-content-extraction benchmark's)."""
        return self.layout == "web-content-extraction"

    @property
    def ground_truth(self) -> str:
        """Who wrote the ground truth, and how the parts were drawn, in a few words for a title."""
        if self.layout == "wcxb":
            return "ground truth reviewed by people; validation = the publisher's held-out test set"
        return "AI-made ground truth" if self.ai_ground_truth else "ground truth by people"


def load_pages(folder: str | Path, *, limit: int | None = None) -> list[Page]:
    """All pages of ``folder`` in key order (see :func:`load_set`)."""
    return load_set(folder, limit=limit).pages


def load_set(folder: str | Path, *, limit: int | None = None) -> PageSet:
    """The pages of ``folder`` in key order, in any of the layouts; the HTML is read as UTF-8, as
    the benchmarks' own runners read it. ``limit``: only the first pages (of each of the
    publisher's splits, where it has them, so a quick check still sees both parts)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DataError(
            f"{root} is not a folder; pass a benchmark folder (html/ and ground-truth.json, or "
            "ground-truth/*.json, or dev/ and test/ with those)"
        )
    truth_file = root / "ground-truth.json"
    if truth_file.is_file():
        return PageSet(root, "article-extraction", _load_article_layout(root, truth_file, limit))
    if all((root / split / "ground-truth").is_dir() for split in WCXB_SPLITS):
        return _load_wcxb(root, limit)
    truth_dir = _first_dir(root, ("ground-truth", "benchmark/ground-truth"))
    html_dir = _first_dir(root, ("html", "release/html", "benchmark/html"))
    if truth_dir is None:
        raise DataError(
            f"{truth_file} is missing, and so is a ground-truth/ folder of per-page JSON files (or dev/ "
            f"and test/ with one each); is {root} a checkout of the article-extraction benchmark, the "
            "web-content-extraction benchmark or WCXB?"
        )
    if html_dir is None:
        raise DataError(f"{root} has {truth_dir.name}/ but no html/ folder (nor release/html/)")
    pages, unpaired = _load_per_file_layout(truth_dir, html_dir, limit)
    return PageSet(root, "web-content-extraction", pages, unpaired)


def _load_wcxb(root: Path, limit: int | None) -> PageSet:
    """Both of the publisher's splits; a page filed in both (same id) counts once, in test, as the
    publisher's metadata.json has it, so no held-out page is also developed on."""
    held_out = frozenset(file.stem for file in (root / "test" / "ground-truth").glob("*.json"))
    pages: list[Page] = []
    unpaired: list[str] = []
    duplicates: list[str] = []
    for split, part in WCXB_SPLITS.items():
        html_dir = root / split / "html"
        if not html_dir.is_dir():
            raise DataError(f"{root / split} has ground-truth/ but no html/ folder")
        exclude = held_out if part == "dev" else frozenset()
        found, missing = _load_per_file_layout(root / split / "ground-truth", html_dir, limit, exclude)
        pages += [dataclasses.replace(page, given_part=part) for page in found]
        unpaired += [f"{split}/{name}" for name in missing]
        if exclude:
            files = (root / split / "ground-truth").glob("*.json")
            duplicates += sorted(f"{split}/{file.name}" for file in files if file.stem in exclude)
    return PageSet(root, "wcxb", pages, tuple(unpaired), tuple(duplicates))


def _first_dir(root: Path, names: tuple[str, ...]) -> Path | None:
    return next((root / name for name in names if (root / name).is_dir()), None)


def _read_html(html_file: Path, listed_in: str) -> str:
    try:
        return gzip.decompress(html_file.read_bytes()).decode("utf-8", "replace")
    except FileNotFoundError:
        raise DataError(f"{html_file} is missing (listed in {listed_in})") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{html_file} is not a readable gzip file ({type(exc).__name__})") from None


def _snippets(entry: dict[str, Any], name: str) -> tuple[str, ...]:
    value = entry.get(name) or ()
    return tuple(str(item) for item in value if str(item).strip()) if isinstance(value, list) else ()


def _load_article_layout(root: Path, truth_file: Path, limit: int | None) -> list[Page]:
    try:
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise DataError(f"{truth_file} is not readable JSON ({type(exc).__name__})") from None
    if not isinstance(truth, dict) or not truth:
        raise DataError(f"{truth_file} should map page hashes to {{url, articleBody}}")
    pages: list[Page] = []
    for key in sorted(truth)[:limit]:
        entry = truth[key] if isinstance(truth[key], dict) else {}
        pages.append(
            Page(
                key=key,
                url=str(entry.get("url", "")),
                html=_read_html(root / "html" / f"{key}.html.gz", "ground-truth.json"),
                article_body=str(entry.get("articleBody") or ""),
                must_contain=_snippets(entry, "with"),
                must_not_contain=_snippets(entry, "without"),
            )
        )
    return pages


def _load_per_file_layout(
    truth_dir: Path, html_dir: Path, limit: int | None, exclude: frozenset[str] = frozenset()
) -> tuple[list[Page], tuple[str, ...]]:
    """The pages whose ground truth has its HTML beside it, and the names of those that have not
    (the published repository has one such file; its own runner pairs them the same way).
    Files named in ``exclude`` (by stem) are skipped."""
    files = sorted(file for file in truth_dir.glob("*.json") if file.stem not in exclude)
    if not files:
        raise DataError(f"{truth_dir} holds no .json ground-truth files")
    unpaired = tuple(file.name for file in files if not (html_dir / f"{file.stem}.html.gz").is_file())
    files = [file for file in files if file.name not in unpaired][:limit]
    if not files:
        raise DataError(f"none of the ground-truth files in {truth_dir} has its HTML in {html_dir}")
    pages: list[Page] = []
    for file in files:
        try:
            document = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise DataError(f"{file} is not readable JSON ({type(exc).__name__})") from None
        truth = document.get("ground_truth") if isinstance(document, dict) else None
        if not isinstance(truth, dict):
            raise DataError(f"{file} has no ground_truth object (with main_content, with, without)")
        pages.append(
            Page(
                key=file.stem,
                url=str(document.get("url", "")),
                html=_read_html(html_dir / f"{file.stem}.html.gz", file.name),
                article_body=str(truth.get("main_content") or ""),
                must_contain=_snippets(truth, "with"),
                must_not_contain=_snippets(truth, "without"),
                page_type=_page_type(document),
            )
        )
    return pages, unpaired


def _page_type(document: dict[str, Any]) -> str:
    """The page's labelled type (schema 2.0 keeps it in ``_internal.page_type.primary``), or ""."""
    internal = document.get("_internal")
    label = internal.get("page_type") if isinstance(internal, dict) else None
    primary = label.get("primary") if isinstance(label, dict) else label
    return primary.strip() if isinstance(primary, str) else ""
