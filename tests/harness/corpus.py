"""A small hand-made converted document, in the corpus layout docs/architecture.md describes."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image as PILImage

PAGES = (
    "### Company overview\nAcme Robotics was founded in 1998 in Lyon.\nIt builds warehouse robots.",
    "### Finances\nRevenue in 2022: 48.5 million euros\nNet margin: 12%\nEmployees: 1,250",
    "### Products\nThe flagship robot is called Hermes.\nHermes carries up to 300 kg.",
)


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def write_document(folder: Path, pages: tuple[str, ...] = PAGES, title: str = "Acme annual report") -> Path:
    """``folder/document.md`` with one ``## Page N`` per page, page images, and ``meta.json``."""
    (folder / "pages").mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    spans = []
    for number, body in enumerate(pages, 1):
        start = len(lines) + 1
        image = f"pages/page-{number:04d}.png"
        (folder / image).write_bytes(png_bytes((number * 40 % 255, 80, 120)))
        lines += [f"## Page {number}", "", f"![Page {number}]({image})", "", *body.splitlines(), ""]
        spans.append([start, len(lines)])
    (folder / "document.md").write_text("\n".join(lines) + "\n")
    (folder / "meta.json").write_text(json.dumps({"pages": len(pages), "page_lines": spans}))
    return folder
