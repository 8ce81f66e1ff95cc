"""Fixture pages for the markfetch tests (files in pages/, plus a few built in code)."""

from __future__ import annotations

from pathlib import Path

PAGES = Path(__file__).parent / "pages"


def page(name: str) -> str:
    return (PAGES / f"{name}.html").read_text(encoding="utf-8")


def paragraphs(n: int, topic: str = "harbour") -> str:
    """``n`` distinct paragraphs of plain prose, enough for a reader view to keep."""
    return "".join(
        f"<p>Paragraph {i} about the {topic}: the boats came in late that evening and the crew unloaded "
        f"their catch under the lamps while the gulls circled above the quay, waiting for scraps number {i}.</p>"
        for i in range(n)
    )


def article_page(body: str, *, title: str = "Test page", head: str = '<meta charset="utf-8">') -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body><article>{body}</article></body></html>"


WINDOWS_1252_TEXT = "Café “naïve” façade – déjà vu for the señor, costing 5 €"
SHIFT_JIS_TEXT = "日本語の記事です。東京の天気は晴れ、気温は二十五度でした。"
