"""Draw the suite's documents: fpdf2 for the pages, Pillow for the charts, maps and plans (raster only).

Output is deterministic: a fixed creation date (fpdf2 derives the file identifier from the content
and that date), a fixed producer string, and images drawn without randomness.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from docab_benchmark.suite.content import (
    BarChart,
    Block,
    Box,
    Document,
    FloorPlan,
    Heading,
    Paragraph,
    PieChart,
    SiteMap,
    Table,
)

FIXED_DATE = datetime(2024, 1, 1, tzinfo=UTC)
_COLOURS = {"red": (200, 40, 40), "blue": (40, 80, 200), "green": (40, 150, 70), "orange": (230, 140, 30)}
_PIE = [(66, 133, 244), (219, 68, 55), (244, 180, 0), (15, 157, 88)]
_IMAGE_WIDTH, _IMAGE_HEIGHT = 1200, 720  # pixels; placed 170 mm wide


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _canvas() -> tuple[Any, Any]:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (_IMAGE_WIDTH, _IMAGE_HEIGHT), "white")
    return image, ImageDraw.Draw(image)


def _png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def draw_bar_chart(chart: BarChart) -> bytes:
    image, draw = _canvas()
    draw.text((_IMAGE_WIDTH // 2, 40), chart.title, fill="black", font=_font(40), anchor="mm")
    left, bottom, top = 120, _IMAGE_HEIGHT - 90, 110
    draw.line([(left, top), (left, bottom), (_IMAGE_WIDTH - 60, bottom)], fill="black", width=3)
    peak = max(chart.values)
    slot = (_IMAGE_WIDTH - 60 - left) / len(chart.values)
    for i, (label, value) in enumerate(zip(chart.labels, chart.values, strict=True)):
        x0 = left + i * slot + slot * 0.2
        x1 = x0 + slot * 0.6
        y0 = bottom - (bottom - top - 50) * value / peak
        draw.rectangle([x0, y0, x1, bottom], fill=(66, 133, 244))
        draw.text(((x0 + x1) / 2, y0 - 24), str(value), fill="black", font=_font(34), anchor="mm")
        draw.text(((x0 + x1) / 2, bottom + 36), label, fill="black", font=_font(34), anchor="mm")
    return _png(image)


def draw_pie_chart(chart: PieChart) -> bytes:
    image, draw = _canvas()
    draw.text((_IMAGE_WIDTH // 2, 40), chart.title, fill="black", font=_font(40), anchor="mm")
    box = (120, 120, 620, 620)
    start = -90.0
    for i, share in enumerate(chart.shares):
        end = start + 360 * share / 100
        draw.pieslice(box, start, end, fill=_PIE[i % len(_PIE)], outline="white", width=3)
        start = end
    for i, (label, share) in enumerate(zip(chart.labels, chart.shares, strict=True)):
        y = 190 + i * 90
        draw.rectangle([700, y - 22, 744, y + 22], fill=_PIE[i % len(_PIE)])
        draw.text((764, y), f"{label}: {share:.1f}%", fill="black", font=_font(34), anchor="lm")
    if chart.note:
        draw.text(
            (700, 190 + len(chart.labels) * 90 + 20), chart.note, fill="black", font=_font(30), anchor="lm"
        )
    return _png(image)


def draw_site_map(site_map: SiteMap) -> bytes:
    image, draw = _canvas()
    draw.rectangle([20, 20, _IMAGE_WIDTH - 20, _IMAGE_HEIGHT - 20], outline=(120, 120, 120), width=3)
    # a river across the map, so "riverside" means something on the picture
    points = [(20 + x, 380 + 60 * math.sin(x / 140)) for x in range(0, _IMAGE_WIDTH - 40, 20)]
    draw.line(points, fill=(150, 190, 230), width=28)
    for code, colour, x, y in site_map.markers:
        cx, cy = 60 + x * (_IMAGE_WIDTH - 360), 60 + y * (_IMAGE_HEIGHT - 120)
        draw.ellipse([cx - 22, cy - 22, cx + 22, cy + 22], fill=_COLOURS[colour], outline="black", width=2)
        draw.text((cx + 30, cy), code, fill="black", font=_font(32), anchor="lm")
    for i, (colour, meaning) in enumerate(site_map.legend):
        y = 80 + i * 60
        draw.ellipse([_IMAGE_WIDTH - 260, y - 18, _IMAGE_WIDTH - 224, y + 18], fill=_COLOURS[colour])
        draw.text((_IMAGE_WIDTH - 210, y), meaning, fill="black", font=_font(30), anchor="lm")
    return _png(image)


def draw_floor_plan(plan: FloorPlan) -> bytes:
    image, draw = _canvas()
    rows, cols = len(plan.rows), max(len(r) for r in plan.rows)
    cell_w, cell_h = (_IMAGE_WIDTH - 80) / cols, (_IMAGE_HEIGHT - 80) / rows
    for r, row in enumerate(plan.rows):
        for c, room in enumerate(row):
            x0, y0 = 40 + c * cell_w, 40 + r * cell_h
            draw.rectangle([x0, y0, x0 + cell_w, y0 + cell_h], fill=(245, 240, 225), outline="black", width=4)
            draw.text((x0 + cell_w / 2, y0 + cell_h / 2), room, fill="black", font=_font(34), anchor="mm")
    return _png(image)


_DRAWERS: dict[type, Callable[[Any], bytes]] = {
    BarChart: draw_bar_chart,
    PieChart: draw_pie_chart,
    SiteMap: draw_site_map,
    FloorPlan: draw_floor_plan,
}


def _draw_block(pdf: Any, block: Block) -> None:
    if isinstance(block, Heading):
        pdf.set_font("Helvetica", "B", 22 if block.level == 1 else 16)
        pdf.multi_cell(0, 11 if block.level == 1 else 9, block.text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    elif isinstance(block, Paragraph):
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, block.text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    elif isinstance(block, Box):  # shaded, right-aligned, on lines of its own
        x, y, w = 135, pdf.get_y(), 65
        pdf.set_fill_color(225, 232, 245)
        pdf.rect(x, y, w, 8 + 6 * len(block.lines), style="F")
        pdf.set_xy(x + 3, y + 2)
        pdf.set_font("Helvetica", "B", 10)
        pdf.cell(w - 6, 6, block.title, new_x="LEFT", new_y="NEXT")
        pdf.set_font("Helvetica", "", 10)
        for line in block.lines:
            pdf.cell(w - 6, 6, line, new_x="LEFT", new_y="NEXT")
        pdf.set_xy(pdf.l_margin, pdf.get_y() + 6)
    elif isinstance(block, Table):
        pdf.set_font("Helvetica", "", 11)
        with pdf.table(text_align="LEFT", first_row_as_headings=True) as table:
            for row in (block.header, *block.rows):
                cells = table.row()
                for value in row:
                    cells.cell(value)
        pdf.ln(4)
    else:
        pdf.image(io.BytesIO(_DRAWERS[type(block)](block)), w=170)
        pdf.ln(2)
        pdf.set_font("Helvetica", "I", 10)
        pdf.multi_cell(0, 6, block.caption, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)


def render_pdf(document: Document) -> bytes:
    """The document as PDF bytes (A4), identical on every call."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_producer("docab built-in suite")
    pdf.set_title(document.title)
    pdf.set_author("docab")
    pdf.set_auto_page_break(auto=True, margin=15)
    for page in document.pages:
        pdf.add_page()
        for block in page.blocks:
            _draw_block(pdf, block)
    return bytes(pdf.output())
