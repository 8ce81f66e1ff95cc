"""What the bridge asks the vision model: default prompts, OCR instructions per output format."""

from __future__ import annotations

import json
import re
from typing import Literal

OcrFormat = Literal["plain", "markdown", "json"]
OCR_FORMATS: tuple[OcrFormat, ...] = ("plain", "markdown", "json")

DEFAULT_ANALYZE_PROMPT = "Describe this image in detail."
DEFAULT_COMPARE_PROMPT = "Compare these images and describe their differences and similarities."
NO_TEXT = "[no text]"

_OCR_INSTRUCTIONS: dict[str, str] = {
    "plain": (
        "Transcribe all text in this image exactly as written, in reading order, keeping line breaks and "
        "the layout of columns and tables as plain text. Output only the text, with no commentary."
    ),
    "markdown": (
        "Transcribe all text in this image as Markdown, in reading order: keep headings, lists, tables "
        "(as GitHub-flavoured tables), emphasis and code. Output only the Markdown, without code fences "
        "around it and without commentary."
    ),
    "json": (
        'Transcribe all text in this image as JSON of the form {"blocks": [{"type": "heading", "text": '
        '"..."}]}, one block per heading, paragraph, list, table, caption, code or other text element, '
        "in reading order; type is one of heading, paragraph, list, table, caption, code, other. Output "
        "only the JSON, without code fences and without commentary."
    ),
}

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def parse_languages(raw: str | None) -> tuple[str, ...]:
    """``"zh, en"`` / ``"eng+deu"`` -> ``("zh", "en")`` / ``("eng", "deu")``; order kept, duplicates dropped."""
    if not raw:
        return ()
    parts = re.split(r"[,+;\s]+", raw.strip())
    return tuple(dict.fromkeys(p.strip().lower() for p in parts if p.strip()))


def ocr_prompt(fmt: OcrFormat, languages: tuple[str, ...]) -> str:
    text = _OCR_INSTRUCTIONS[fmt]
    if fmt != "json":
        text += f" If the image contains no text, output exactly {NO_TEXT}."
    else:
        text += ' If the image contains no text, output {"blocks": []}.'
    if languages:
        text += f" The text is likely in: {', '.join(languages)}."
    return text


def compare_prompt(prompt: str | None, count: int) -> str:
    request = (prompt or "").strip() or DEFAULT_COMPARE_PROMPT
    return f"The {count} images above are labelled Image 1 to Image {count}. {request}"


def clean_json_answer(text: str) -> str:
    """Strip a Markdown code fence a model put around JSON, when what is inside parses."""
    match = _FENCE.match(text)
    if match is None:
        return text.strip()
    inner = match.group(1).strip()
    try:
        json.loads(inner)
    except ValueError:
        return text.strip()
    return inner
