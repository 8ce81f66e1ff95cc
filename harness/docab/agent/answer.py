"""The answer protocol: how an agent's answer is obtained, one protocol per run, the same for every arm.

- ``submit_tool``: the agent calls ``submit_answer(status, answer)``; ``status`` is ``answered``
  or ``not_answerable``. The submitted answer is scored as given (no extraction).
- ``extraction``: the agent ends with free text; the benchmark's answer extraction (an LLM call
  with the benchmark's own prompt) reduces it to a short answer. Those calls are counted under the
  usage role ``extractor``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from docab.log.records import AnswerProtocol
from docab.messages import ToolSpec
from docab.models.retry import CALL_TRACE
from docab.protocol import NOT_ANSWERABLE, SUBMIT_TOOL_NAME
from docab.usage import Usage

SUBMIT_TOOL = ToolSpec(
    name=SUBMIT_TOOL_NAME,
    description=(
        "Submit your final answer and end the task. Use status 'answered' with the answer alone, as short "
        'as possible (a number, a name, a short phrase, or a list such as ["a", "b"]); use status '
        "'not_answerable' when the document does not contain the answer."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["answered", "not_answerable"]},
            "answer": {"type": "string", "description": "The answer; empty when not answerable."},
        },
        "required": ["status", "answer"],
        "additionalProperties": False,
    },
)

INSTRUCTIONS: dict[str, str] = {
    "submit_tool": (
        'When you know the answer, call `submit_answer` with status "answered" and the answer alone, as '
        'short as possible: a number, a name, a short phrase, or a list such as ["a", "b"]. If the '
        'document does not contain the answer, call `submit_answer` with status "not_answerable".'
    ),
    "extraction": (
        "When you know the answer, reply with it in plain text and no tool call. If the document does not "
        "contain the answer, say that the question is not answerable."
    ),
}

REMINDER = "You have not submitted an answer. Call `submit_answer` to finish (status and answer)."


@dataclass(frozen=True)
class Submission:
    status: Literal["answered", "not_answerable"]
    answer: str

    @property
    def scored_answer(self) -> str:
        return NOT_ANSWERABLE if self.status == "not_answerable" else self.answer


def parse_submission(arguments: Any) -> Submission | str:
    """A valid submission, or the error text to show the model."""
    if not isinstance(arguments, dict):
        return "submit_answer takes an object with 'status' and 'answer'"
    status = arguments.get("status")
    answer = arguments.get("answer", "")
    if status not in ("answered", "not_answerable"):
        return "status must be 'answered' or 'not_answerable'"
    if not isinstance(answer, str):
        if not isinstance(answer, int | float | list) or isinstance(answer, bool):
            return "answer must be a string"
        from docab_benchmark.mmlongbench.extraction import submitted_answer

        answer = submitted_answer(answer).pred  # the text the scorer reads: a list literal, a number
    if status == "answered" and not answer.strip():
        return "an 'answered' submission needs a non-empty answer (or use status 'not_answerable')"
    return Submission(status, answer.strip())


@dataclass(frozen=True)
class Extraction:
    """What the extraction step gave: the answer to score, its token use (role ``extractor``), an
    error when the extractor could not be reached (the sample is then an error), and the
    benchmark's own account of the step for the transcript."""

    answer: str
    usage: tuple[Usage, ...] = ()
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class AnswerExtractor(Protocol):
    async def extract(self, question: str, response: str) -> Extraction: ...


class _RecordingCompletion:
    """Wraps a completion model and keeps the usage of every call, booked as ``extractor``: also
    the tokens billed for unusable replies of a call that failed in the end."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.usage: list[Usage] = []

    async def complete(self, messages: Any, **kwargs: Any) -> Any:
        scope = CALL_TRACE.set(None)
        try:
            completion = await self.inner.complete(messages, **kwargs)
        except BaseException:
            # A call that failed (or was cut short) may still have been billed for replies it
            # could not use: the provider's retry trace holds their tokens.
            call = CALL_TRACE.get()
            if call is not None:
                self.usage.extend(u.with_role("extractor") for u in call.billed)
            raise
        finally:
            CALL_TRACE.reset(scope)
        usage = getattr(completion, "usage", None)
        if isinstance(usage, Usage):
            self.usage.append(usage.with_role("extractor"))
        return completion


@dataclass
class BenchmarkExtractor:
    """The benchmark's answer extraction (``docab_benchmark.mmlongbench.extraction``) through a harness model.

    An unparsable extractor reply scores 0 as in the official code ("Failed to extract"); an
    extractor that could not be reached makes the sample an error.
    """

    completion_model: Any  # anything with ``async complete(messages, *, max_tokens, temperature)``
    model: Any = None  # the harness model behind it, closed by the runner with the run's event loop
    prompt: Any = None  # an ``ExtractionPrompt``, read once at start-up; None: the bundled copy

    async def extract(self, question: str, response: str) -> Extraction:
        from docab_benchmark.mmlongbench.extraction import extract_answer, load_prompt

        if self.prompt is None:
            self.prompt = load_prompt()
        recorder = _RecordingCompletion(self.completion_model)
        result = await extract_answer(recorder, question, response, prompt=self.prompt)
        details = {k: v for k, v in result.to_dict().items() if k != "usage"}
        error = f"answer extraction failed: {result.error}" if result.status == "api-failure" else None
        return Extraction(result.pred, tuple(recorder.usage), error, details)


def protocol_instructions(protocol: AnswerProtocol) -> str:
    return INSTRUCTIONS[protocol]
