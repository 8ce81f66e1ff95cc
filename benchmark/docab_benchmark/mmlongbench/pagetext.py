"""The text of each page of a PDF, as a converter gives it: docab's corpus and peer libraries, for findability.

``docab`` reads a converted corpus (``document.md`` cut at the page spans ``meta.json`` records,
so page images, headings and OCR notes are the agent's view exactly). The peers are comparisons
only, never dependencies of docab: each is imported when selected, and a missing one raises
``PeerMissing`` whose message holds the ``uv run --with`` line that supplies it.

| name | library | page text |
|---|---|---|
| ``pypdf`` | pypdf | ``PdfReader(pdf).pages[i].extract_text()`` |
| ``pdfplumber`` | pdfplumber | ``pdfplumber.open(pdf).pages[i].extract_text()`` |
| ``markitdown`` | markitdown[pdf] | ``MarkItDown().convert(pdf)``, split at form feeds; searched as a whole only when its output has no page boundaries |
| ``pymupdf4llm`` | pymupdf4llm<2 (2.0 installs no module) | classic: ``use_layout(False)`` then ``to_markdown(pdf, page_chunks=True)``, one chunk per page |
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

PageTexts = list[str]
"""Text of pages 1..N (index 0 is page 1)."""


class PeerMissing(Exception):
    """A peer library is not installed; the message says how to run with it."""


@dataclass(frozen=True)
class Peer:
    """A comparison converter: its module, the ``--with`` requirement that installs it, and its extractor."""

    name: str
    module: str
    requirement: str
    extract: Callable[[Path, int], PageTexts | None]


def _import(module: str) -> Any:
    import importlib

    return importlib.import_module(module)


def _pypdf(pdf: Path, pages: int) -> PageTexts:
    reader = _import("pypdf").PdfReader(str(pdf))
    return [page.extract_text() or "" for page in reader.pages]


def _pdfplumber(pdf: Path, pages: int) -> PageTexts:
    with _import("pdfplumber").open(str(pdf)) as document:
        return [page.extract_text() or "" for page in document.pages]


def _markitdown(pdf: Path, pages: int) -> PageTexts | None:
    text = str(_import("markitdown").MarkItDown().convert(str(pdf)).text_content)
    parts = text.split("\f")
    if len(parts) == pages + 1 and not parts[-1].strip():
        parts = parts[:-1]
    if len(parts) == pages:
        return parts
    return [text]  # no page boundaries: searched as a whole only


def _pymupdf4llm(pdf: Path, pages: int) -> PageTexts:
    module = _import("pymupdf4llm")
    if hasattr(module, "use_layout"):  # 1.27+: the classic text path, without the layout model and its OCR
        module.use_layout(False)
    chunks = module.to_markdown(str(pdf), page_chunks=True, show_progress=False)
    return [str(chunk.get("text", "")) for chunk in chunks]


PEERS: Final[dict[str, Peer]] = {
    peer.name: peer
    for peer in (
        Peer("pypdf", "pypdf", "pypdf", _pypdf),
        Peer("pdfplumber", "pdfplumber", "pdfplumber", _pdfplumber),
        Peer("markitdown", "markitdown", "markitdown[pdf]", _markitdown),
        Peer("pymupdf4llm", "pymupdf4llm", "pymupdf4llm<2", _pymupdf4llm),
    )
}


def peer(name: str, command: str) -> Peer:
    """The peer ``name``, checked importable; else ``PeerMissing`` naming the ``uv run --with`` line for ``command``."""
    found = PEERS.get(name)
    if found is None:
        raise PeerMissing(f"unknown converter {name!r}; choose docab, docab-no-ocr or {', '.join(PEERS)}")
    try:
        _import(found.module)
    except ImportError:
        raise PeerMissing(
            f"{name} is a comparison, not a docab dependency; run with it installed for this command only:\n"
            f"  uv run --with '{found.requirement}' {command}"
        ) from None
    return found


_STRUCTURE = re.compile(
    r"^(## Page \d+|!\[(Page|Figure) [\d.]+\]\([^)]*\)|_(OCR text|No text layer|Conversion note)\b.*_)$"
)


def pdf_page_count(pdf: Path) -> int | None:
    """The PDF's page count, or None when it cannot be opened."""
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(str(pdf))
    except (pypdfium2.PdfiumError, OSError):
        return None
    try:
        return len(document)
    finally:
        document.close()


def corpus_page_texts(document_dir: Path) -> PageTexts:
    """Pages of a converted document: its ``document.md`` cut at the spans in ``meta.json``.

    The lines docab adds around the text (``## Page N``, the page image and figure links, the
    OCR and no-text notes) are left out: their page numbers would match ``Int`` answers that a
    peer's plain text could not, and the comparison would not be fair.
    """
    meta = json.loads((document_dir / "meta.json").read_text(encoding="utf-8"))
    lines = (document_dir / "document.md").read_text(encoding="utf-8").splitlines()
    count = int(meta["page_count"])
    texts = [""] * count
    for page in meta["pages"]:
        first, last = page["lines"]
        number = int(page["page"])
        if 1 <= number <= count:
            texts[number - 1] = "\n".join(
                line for line in lines[first - 1 : last] if not _STRUCTURE.match(line)
            )
    return texts
