"""Answer extraction as MMLongBench-Doc does it, through any model; or an answer the agent submitted.

Official path (``extract_answer``): the extraction prompt is the user turn; the question and the
free-form response follow as an *assistant* turn ``"\\n\\nQuestion:{question}\\nAnalysis:{response}\\n"``;
temperature 0, at most 256 output tokens. The reply is parsed as the text between the first
``Extracted answer:`` and ``Answer format:``. A failed model call yields the raw reply "Failed";
a reply without the marker yields the prediction "Failed to extract" (which scores 0). The
extractor's own format line is recorded but never used for scoring (the gold format is).

Structured path (``submitted_answer``): the agent gave its answer through a tool, so extraction is
skipped. ``Extraction.method`` records which path produced the prediction.

The model is anything with ``async complete(messages, *, max_tokens, temperature) -> Completion``;
messages are ``{"role": ..., "content": str}`` dicts. The harness adapts its clients to it
(``docab.models.completion_adapter``; for Anthropic models, which would read a final assistant
turn as prefill, it folds that turn into the user turn).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

from docab_benchmark.mmlongbench.errors import DataError

EXTRACTED_MARKER: Final = "Extracted answer:"
FORMAT_MARKER: Final = "Answer format:"
API_FAILURE_REPLY: Final = "Failed"
UNPARSABLE_PREDICTION: Final = "Failed to extract"
EXTRACTION_MAX_TOKENS: Final = 256
EXTRACTION_TEMPERATURE: Final = 0.0
PROMPT_FILE: Final = "prompt_for_answer_extraction.md"


@dataclass(frozen=True)
class Completion:
    """A model's reply: its text and its usage, passed through untouched (the harness's usage record)."""

    text: str
    usage: Any = None


@runtime_checkable
class CompletionModel(Protocol):
    """The one call extraction needs of a model."""

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, max_tokens: int, temperature: float
    ) -> Completion: ...


@dataclass(frozen=True)
class ExtractionPrompt:
    """The extraction prompt's text and where it came from (``source``: a path or ``bundled``)."""

    text: str
    source: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


Method = Literal["llm-extraction", "submitted"]
Status = Literal["ok", "api-failure", "unparsable"]


@dataclass(frozen=True)
class Extraction:
    """The prediction that gets scored, and how it was obtained.

    ``method``: ``llm-extraction`` (the official prompt) or ``submitted`` (through the agent's
    answer tool, no extraction). ``status``: ``ok``; ``api-failure`` (the model call failed, the
    raw reply is "Failed"); ``unparsable`` (no ``Extracted answer:`` in the reply). ``pred`` is
    "Failed to extract" unless ``status`` is ``ok``.
    """

    pred: str
    method: Method
    status: Status = "ok"
    raw: str = ""
    format_guess: str | None = None
    usage: Any = None
    prompt_sha256: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (``usage`` included when it offers ``to_dict``)."""
        usage = self.usage.to_dict() if hasattr(self.usage, "to_dict") else self.usage
        try:
            json.dumps(usage)
        except (TypeError, ValueError):
            usage = repr(usage)
        return {
            "pred": self.pred,
            "method": self.method,
            "status": self.status,
            "raw": self.raw,
            "format_guess": self.format_guess,
            "usage": usage,
            "prompt_sha256": self.prompt_sha256,
            "error": self.error,
        }


def load_prompt(data_prompt: str | Path | None = None) -> ExtractionPrompt:
    """The benchmark's prompt: from ``data_prompt`` (a data folder's copy) when given, else the bundled copy.

    The bundled copy is the benchmark's own file, unchanged (Apache-2.0, see ``prompts/NOTICE``).
    """
    if data_prompt is not None:
        path = Path(data_prompt)
        try:
            return ExtractionPrompt(path.read_text(encoding="utf-8"), str(path))
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read the extraction prompt {path}: {exc}") from None
    text = (
        resources.files("docab_benchmark.mmlongbench")
        .joinpath("prompts", PROMPT_FILE)
        .read_text(encoding="utf-8")
    )
    return ExtractionPrompt(text, "bundled")


def extraction_messages(prompt: str, question: str, response: str) -> list[dict[str, str]]:
    """The official message layout: the prompt as the user turn, question and analysis as an assistant turn."""
    return [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": f"\n\nQuestion:{question}\nAnalysis:{response}\n"},
    ]


def parse_extraction(reply: str) -> tuple[str, str | None] | None:
    """``(answer, format guess)`` from an extractor reply, or None without ``Extracted answer:``.

    As the official runner: the text before the first ``Answer format:``, then the part after the
    first ``Extracted answer:`` (up to a second one), stripped.
    """
    before_format, _, after_format = reply.partition(FORMAT_MARKER)
    parts = before_format.split(EXTRACTED_MARKER)
    if len(parts) < 2:
        return None
    guess = after_format.strip().splitlines()[0].strip() if after_format.strip() else None
    return parts[1].strip(), guess


async def extract_answer(
    model: CompletionModel,
    question: str,
    response: str,
    *,
    prompt: ExtractionPrompt | None = None,
    max_tokens: int = EXTRACTION_MAX_TOKENS,
    temperature: float = EXTRACTION_TEMPERATURE,
) -> Extraction:
    """Reduce a free-form ``response`` to a short answer with the official prompt; never raises for a model failure."""
    prompt = prompt or load_prompt()
    try:
        completion = await model.complete(
            extraction_messages(prompt.text, question, response),
            max_tokens=max_tokens,
            temperature=temperature,
        )
    except Exception as exc:  # any provider failure is an outcome here, as in the official code
        return Extraction(
            pred=UNPARSABLE_PREDICTION,
            method="llm-extraction",
            status="api-failure",
            raw=API_FAILURE_REPLY,
            prompt_sha256=prompt.sha256,
            error=f"{type(exc).__name__}: {str(exc)[:300]}",
        )
    text = completion.text or ""
    parsed = parse_extraction(text)
    if parsed is None:
        return Extraction(
            pred=UNPARSABLE_PREDICTION,
            method="llm-extraction",
            status="unparsable",
            raw=text,
            usage=completion.usage,
            prompt_sha256=prompt.sha256,
        )
    answer, guess = parsed
    return Extraction(
        pred=answer,
        method="llm-extraction",
        raw=text,
        format_guess=guess,
        usage=completion.usage,
        prompt_sha256=prompt.sha256,
    )


def submitted_answer(answer: object) -> Extraction:
    """A prediction the agent submitted through its answer tool (no extraction).

    Structured values become the text the scorer reads: a list becomes a Python list literal
    (``['a', 'b']``), a number its decimal text, a string is stripped.
    """
    if isinstance(answer, (list, tuple)):
        pred = repr([item if isinstance(item, (str, int, float)) else str(item) for item in answer])
    elif isinstance(answer, bool) or answer is None:
        pred = str(answer)
    elif isinstance(answer, (int, float)):
        pred = repr(answer)
    else:
        pred = str(answer).strip()
    return Extraction(pred=pred, method="submitted", raw=pred)
