"""The run record: one per (run, arm, question, epoch), written as one JSON line.

This is the only definition of what a run produces per sample; the runner writes it, and the
report, the viewer, the comparison and the notebooks read it. Bump ``RECORD_VERSION`` on any change
that a reader must know about, and keep ``from_dict`` able to read older versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from docab.log.usage import Usage, totals_by_role

RECORD_VERSION = 1

Status = Literal["ok", "error", "timeout", "limit"]
AnswerProtocol = Literal["submit_tool", "extraction"]


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    duration_s: float
    is_error: bool = False
    truncated: bool = False  # the shared output budget cut the result
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    # identity
    run_id: str
    arm: str
    qid: str
    doc_id: str
    epoch: int
    model: str
    # outcome
    status: Status
    score: float  # 0 for every non-ok status (intention-to-treat)
    answer_protocol: AnswerProtocol
    raw_answer: str  # the agent's final answer as given (submitted, or its last message)
    extracted_answer: str  # what was scored: the submitted answer, or the extractor's output
    gold: str
    answer_format: str
    # cost
    usage: tuple[Usage, ...] = ()  # one per model call, each with its role
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    wall_time_s: float = 0.0
    turns: int = 0
    tool_calls: tuple[ToolCallRecord, ...] = ()
    retries: int = 0  # model-call retries summed over the sample
    # trail
    limit_hit: str | None = None  # "turns" | "tokens" | "wall_time" when status == "limit"
    errors: tuple[str, ...] = ()
    pages_read: tuple[int, ...] = ()  # pages whose content the agent saw, for evidence recall
    sections_read: tuple[str, ...] = ()
    evidence_pages: tuple[int, ...] = ()
    evidence_sources: tuple[str, ...] = ()
    doc_type: str = ""
    transcript: str | None = None  # path of the transcript, relative to the run folder
    started_at: str = ""  # ISO 8601 UTC
    version: int = RECORD_VERSION

    @property
    def key(self) -> tuple[str, str, int]:
        """What makes a record unique within a run; resume skips keys already written."""
        return (self.arm, self.qid, self.epoch)

    def tokens(self, role: str | None = None) -> int:
        return sum(u.total for u in self.usage if role is None or u.role == role)

    def to_dict(self) -> dict[str, Any]:
        # Built by hand: ``dataclasses.asdict`` deep-copies every nested value (raw provider usage,
        # tool arguments) and cost milliseconds per record in the runner's hot path.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for name in ("errors", "pages_read", "sections_read", "evidence_pages", "evidence_sources"):
            data[name] = list(data[name])
        data["tool_calls"] = [
            {name: getattr(c, name) for name in c.__dataclass_fields__} for c in self.tool_calls
        ]
        data["usage"] = [u.to_dict() for u in self.usage]
        data["usage_totals"] = {role: t.to_dict() for role, t in totals_by_role(self.usage).items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["usage"] = tuple(Usage.from_dict(u) for u in data.get("usage", ()))
        values["tool_calls"] = tuple(ToolCallRecord(**c) for c in data.get("tool_calls", ()))
        for name in ("errors", "pages_read", "sections_read", "evidence_pages", "evidence_sources"):
            values[name] = tuple(data.get(name, ()))
        return cls(**values)
