"""The events of a sample's transcript, defined once: built by the agent loop and the runner,
written by ``docab.log.transcript``, read back by the viewer.

An event is one of five models, told apart by ``type`` (a discriminated union, :data:`Event`):

``message``      a user turn the harness sent (the question, a reminder to answer)
``model_turn``   one model call: its text, the tool calls it asked for, usage, latency, raw reply
``tool_result``  what one tool call returned, as the model saw it (after the output budget)
``model_error``  a model call that failed for good; the sample ends with status error or timeout
``answer``       the answer, how it was obtained and scored (always the last event)

The transcript file (:class:`Transcript`, ``TRANSCRIPT_VERSION``)::

    {"version": 2, "run_id", "arm", "qid", "epoch", "model", "system",
     "tools": [{"name", "description", "input_schema"}], "events": [event...]}

Content blocks are ``{"type": "text", "text"}`` or ``{"type": "image", "media_type", "sha256",
"path"}``; an image is stored once per run at ``path`` (``images/<sha256>.<ext>``). In memory, an
image block built from an image (:meth:`ImageBlock.of`) also holds its bytes, which the transcript
writer stores; they are never part of the JSON.

Versions: 1, the hand-built dicts of docab before this module (fields could be missing: a
``model_error`` without ``retries``, a ``tool_result`` without ``meta``); 2, these models: every
field present and typed, tool calls keep the ``parse_error`` that stopped them running.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr, TypeAdapter

from docab.log.records import AnswerProtocol, Status
from docab.messages import Block, Image, Message, Role, Text, ToolCall, ToolResult, ToolSpec, Turn
from docab.usage import Usage

TRANSCRIPT_VERSION: Literal[2] = 2

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def image_path(image: Image) -> str:
    """Where a run stores an image, relative to the run folder: one file per content."""
    return f"images/{image.sha256}.{_EXTENSIONS.get(image.media_type, 'bin')}"


def json_value(value: object) -> JsonValue:
    """Tool ``_meta``, arguments and raw provider data made safe for JSON: mappings get string keys,
    tuples become lists, and objects JSON cannot hold become their ``str``."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _json_object(value: object) -> dict[str, JsonValue]:
    converted = json_value(value)
    return converted if isinstance(converted, dict) else {}


class EventModel(BaseModel):
    """Frozen, and strict about keys: a transcript part with other fields is not of this version."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# -- content ----------------------------------------------------------------------------------------------


class TextBlock(EventModel):
    type: Literal["text"] = "text"
    text: str


class ImageBlock(EventModel):
    type: Literal["image"] = "image"
    media_type: str  # image/png, image/jpeg, image/gif, image/webp
    sha256: str  # of the image's bytes
    path: str  # images/<sha256>.<ext>, relative to the run folder (``image_path``)
    _image: Image | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, image: Image) -> ImageBlock:
        block = cls(media_type=image.media_type, sha256=image.sha256, path=image_path(image))
        block._image = image
        return block

    @property
    def image(self) -> Image | None:
        """The image itself while the transcript is in memory; None once read back from a file."""
        return self._image


ContentBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


def content_of(blocks: Iterable[Block]) -> list[TextBlock | ImageBlock]:
    return [TextBlock(text=b.text) if isinstance(b, Text) else ImageBlock.of(b) for b in blocks]


# -- the events -------------------------------------------------------------------------------------------


class MessageEvent(EventModel):
    type: Literal["message"] = "message"
    role: Role
    content: list[ContentBlock]

    @classmethod
    def of(cls, message: Message) -> MessageEvent:
        return cls(role=message.role, content=content_of(message.blocks))


class RequestedCall(EventModel):
    """A tool call a model asked for."""

    id: str
    name: str
    arguments: dict[str, JsonValue]
    parse_error: str | None = None  # the arguments were unusable: the tool did not run

    @classmethod
    def of(cls, call: ToolCall) -> RequestedCall:
        return cls(
            id=call.id, name=call.name, arguments=_json_object(call.arguments), parse_error=call.parse_error
        )


class ModelTurnEvent(EventModel):
    type: Literal["model_turn"] = "model_turn"
    turn: int  # the model call's number in the sample, from 1
    text: str
    tool_calls: list[RequestedCall]
    usage: Usage  # role agent
    latency_s: float  # the whole call, retries and back-off included
    retries: int
    stop_reason: str  # the provider's own value
    raw: JsonValue  # the provider's reply as JSON data

    @classmethod
    def of(cls, number: int, turn: Turn) -> ModelTurnEvent:
        return cls(
            turn=number,
            text=turn.text,
            tool_calls=[RequestedCall.of(c) for c in turn.tool_calls],
            usage=turn.usage,
            latency_s=round(turn.latency_s, 6),
            retries=turn.retries,
            stop_reason=turn.stop_reason,
            raw=json_value(turn.raw),
        )


class ToolResultEvent(EventModel):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    duration_s: float
    is_error: bool
    truncated: bool  # the output budget cut the result
    content: list[ContentBlock]  # what the model was shown
    meta: dict[str, JsonValue]  # the tool's side information (``_meta``: sidecar usage, details)

    @classmethod
    def of(cls, call: ToolCall, result: ToolResult, duration_s: float) -> ToolResultEvent:
        return cls(
            tool_call_id=call.id,
            name=call.name,
            duration_s=round(duration_s, 6),
            is_error=result.is_error,
            truncated=result.truncated,
            content=content_of(result.blocks),
            meta=_json_object(result.meta),
        )


class ModelErrorEvent(EventModel):
    type: Literal["model_error"] = "model_error"
    kind: str  # ``docab.models.base.ModelError.kind``, or ``unexpected`` for a bug in a client
    error: str  # the message, safe to show
    retries: int


class AnswerEvent(EventModel):
    type: Literal["answer"] = "answer"
    protocol: AnswerProtocol
    status: Status  # the sample's
    raw_answer: str  # what the agent gave (its submission, or its final text)
    extracted_answer: str  # what was scored
    gold: str
    answer_format: str
    score: float
    errors: list[str]
    extraction_usage: list[Usage]  # role extractor
    extraction: JsonValue = None  # the benchmark's account of the extraction step, when there was one


Event = Annotated[
    MessageEvent | ModelTurnEvent | ToolResultEvent | ModelErrorEvent | AnswerEvent,
    Field(discriminator="type"),
]
"""One transcript event; ``type`` says which."""

EVENT: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates one event (``EVENT.validate_python(data)``) and dumps one."""


# -- the file ---------------------------------------------------------------------------------------------


class ToolDefinition(EventModel):
    """A tool as the model was told about it."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolDefinition:
        return cls(name=spec.name, description=spec.description, input_schema=_json_object(spec.input_schema))


class TranscriptHeader(EventModel):
    """Everything in a transcript file but its events."""

    version: Literal[2] = TRANSCRIPT_VERSION
    run_id: str
    arm: str
    qid: str
    epoch: int
    model: str
    system: str  # the system prompt
    tools: list[ToolDefinition]  # the tools offered (the answer tool not included)


class Transcript(TranscriptHeader):
    """One sample's transcript: ``transcripts/<arm>/<qid>.e<epoch>.json``."""

    events: list[Event]

    def images(self) -> Iterator[Image]:
        """The images its blocks hold in memory (none once read back from a file)."""
        for event in self.events:
            if isinstance(event, MessageEvent | ToolResultEvent):
                for block in event.content:
                    if isinstance(block, ImageBlock) and block.image is not None:
                        yield block.image
