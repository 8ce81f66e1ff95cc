"""The run record: one per (run, arm, question, epoch), written as one JSON line.

This is the only definition of what a run produces per sample; the runner writes it, and the
report, the viewer, the comparison and the notebooks read it. Bump ``RECORD_VERSION`` on any change
that a reader must know about, and keep ``from_dict`` able to read older versions.

Versions:

- 1: ``pages_read`` held every page any shown line mapped to (a page heading or image reference
  was enough).
- 2: ``pages_read`` holds the pages the agent was shown at least half the text of, or the page
  image of (:data:`READ_SHARE`, ``docab.agent.evidence``); ``page_shares`` gives, per page shown
  anything of, the share of its text shown; ``cached_tool_usage`` keeps the original cost of tool
  answers served from a cache. A version-1 record reads with ``page_shares == ()`` and its
  ``pages_read`` as written (the older, looser measure: :attr:`RunRecord.reads_by_share` is False).
- 3: ``pages_read`` and ``page_shares[].text_share`` count only what read calls opened (a page's
  lines shown by ``read_file``, md-vision or another reader, or its page image); ``pages_seen`` and
  ``page_shares[].seen_share`` also count the lines search results showed (``grep``'s matches and
  context). Versions 1-2 counted search results in ``pages_read``: they read with ``pages_seen``
  equal to their ``pages_read`` (:attr:`RunRecord.reads_by_opening` is False).

Evidence metrics from one record: :attr:`RunRecord.evidence_pages_read` (evidence pages read),
:attr:`~RunRecord.evidence_recall` (their share of the evidence pages) and
:attr:`~RunRecord.evidence_precision` (their share of the pages read); tokens per evidence page
found are ``record.tokens() / len(record.evidence_pages_read)`` summed over a set of records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from docab.pricing.cost import SampleCost
from docab.usage import Usage, totals_by_role

RECORD_VERSION = 3
READ_SHARE = 0.5  # a page counts as read when at least this share of its text was shown
# A page with less text than this (about one short line: a title slide, a lone caption) is read only
# through its page image: a line of it is not reading the page.
LITTLE_TEXT_CHARS = 40

Status = Literal["ok", "error", "timeout", "limit"]
AnswerProtocol = Literal["submit_tool", "extraction"]
# The benchmark's prediction when its extractor's reply has no answer marker (it scores 0):
# ``docab_benchmark.mmlongbench.extraction.UNPARSABLE_PREDICTION``, repeated to keep this module light.
EXTRACTION_FAILED = "Failed to extract"
PROSE_FALLBACK = "prose-fallback"  # RunRecord.answer_path of a prose answer taken through extraction


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    duration_s: float
    is_error: bool = False
    truncated: bool = False  # the shared output budget cut the result
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PageShare:
    """How much of one page the agent was shown (``docab.agent.evidence`` defines page text)."""

    page: int
    text_share: float  # share of the page's text characters shown, 0 to 1 (0 for a page with no text)
    image: bool = False  # its page image was shown
    text_chars: int | None = None  # the page's text characters (None in records written before it)
    # Share shown counting search results too (version 3 on; None before, when text_share did).
    seen_share: float | None = None

    @property
    def read(self) -> bool:
        """The page counts as read: its image was shown, or at least :data:`READ_SHARE` of its text
        when it has at least :data:`LITTLE_TEXT_CHARS` of text (a page with less is read only
        through its image)."""
        if self.image:
            return True
        return self._enough(self.text_share)

    @property
    def seen(self) -> bool:
        """As :attr:`read`, counting what search results showed of the page too."""
        return self._enough(self.text_share if self.seen_share is None else self.seen_share)

    def _enough(self, share: float) -> bool:
        if self.image:
            return True
        enough_text = self.text_chars is None or self.text_chars >= LITTLE_TEXT_CHARS
        return enough_text and share >= READ_SHARE


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
    # What tool answers served from a cache cost when they were first computed (role tool-side);
    # not spent by this sample, so never part of ``usage`` or ``tokens()``.
    cached_tool_usage: tuple[Usage, ...] = ()
    # What model replies served from docab's response cache cost when first made (each also has a
    # zero-token entry in ``usage``, marked as a hit); not spent by this sample.
    cached_model_usage: tuple[Usage, ...] = ()
    model_time_s: float = 0.0
    tool_time_s: float = 0.0
    wall_time_s: float = 0.0
    turns: int = 0
    tool_calls: tuple[ToolCallRecord, ...] = ()
    retries: int = 0  # model-call retries summed over the sample
    # trail
    limit_hit: str | None = None  # "turns" | "tokens" | "wall_time" when status == "limit"
    errors: tuple[str, ...] = ()
    pages_read: tuple[int, ...] = ()  # pages read calls opened (see PageShare.read): evidence recall
    pages_seen: tuple[int, ...] = ()  # pages_read plus pages search results showed most of (version 3)
    page_shares: tuple[PageShare, ...] = ()  # every page shown anything of, by page number
    sections_read: tuple[str, ...] = ()
    evidence_pages: tuple[int, ...] = ()
    evidence_sources: tuple[str, ...] = ()
    doc_type: str = ""
    transcript: str | None = None  # path of the transcript, relative to the run folder
    started_at: str = ""  # ISO 8601 UTC
    # USD per role at the prices in force when it was written (docab.pricing); None in records
    # written before prices were (readers price their usage instead: docab.pricing.sample_cost).
    cost: SampleCost | None = None
    # How the scored answer was obtained when not by the protocol's own path: "prose-fallback" for
    # a submit_tool sample that answered in prose and had it extracted (docab.agent.answer); "" else.
    answer_path: str = ""
    version: int = RECORD_VERSION

    @property
    def key(self) -> tuple[str, str, int]:
        """What makes a record unique within a run; resume skips keys already written."""
        return (self.arm, self.qid, self.epoch)

    def tokens(self, role: str | None = None) -> int:
        return sum(u.total for u in self.usage if role is None or u.role == role)

    def cached_tokens(self) -> int:
        """What the cached tool answers of this sample originally cost (not spent here)."""
        return sum(u.total for u in self.cached_tool_usage)

    @property
    def extraction_failed(self) -> bool:
        """The extractor ran but its reply could not be parsed: the sample is ``ok`` and scores 0,
        with ``extracted_answer`` "Failed to extract". An answer extraction that went wrong, not a
        wrong answer of the model (an extractor that could not be reached makes an ``error``)."""
        return self.status == "ok" and self.extracted_answer == EXTRACTION_FAILED and self.extraction_ran

    @property
    def extraction_ran(self) -> bool:
        """The benchmark's answer extraction produced ``extracted_answer`` (the extraction
        protocol's ``ok`` samples, and prose taken as the answer under ``submit_tool``)."""
        return self.status == "ok" and (
            self.answer_protocol == "extraction" or self.answer_path == PROSE_FALLBACK
        )

    @property
    def reads_by_share(self) -> bool:
        """``pages_read`` uses the share-of-page rule (version 2 on), not the older any-line rule."""
        return self.version >= 2

    @property
    def reads_by_opening(self) -> bool:
        """``pages_read`` counts only pages read calls opened (version 3 on), not search results."""
        return self.version >= 3

    @property
    def pages_seen_or_read(self) -> tuple[int, ...]:
        """The pages shown most of by any tool, search results included (``pages_read`` before
        version 3, which counted search results already)."""
        return self.pages_seen if self.reads_by_opening else self.pages_read

    @property
    def evidence_pages_read(self) -> tuple[int, ...]:
        """The evidence pages among the pages read."""
        return tuple(sorted(set(self.pages_read) & set(self.evidence_pages)))

    @property
    def evidence_recall(self) -> float | None:
        """Share of the evidence pages read; None for a question without evidence pages."""
        gold = set(self.evidence_pages)
        return len(self.evidence_pages_read) / len(gold) if gold else None

    @property
    def evidence_precision(self) -> float | None:
        """Share of the pages read that are evidence pages; None when no page was read."""
        read = set(self.pages_read)
        return len(self.evidence_pages_read) / len(read) if read else None

    def to_dict(self) -> dict[str, Any]:
        # Built by hand: ``dataclasses.asdict`` deep-copies every nested value (raw provider usage,
        # tool arguments) and cost milliseconds per record in the runner's hot path.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for name in (
            "errors",
            "pages_read",
            "pages_seen",
            "sections_read",
            "evidence_pages",
            "evidence_sources",
        ):
            data[name] = list(data[name])
        data["tool_calls"] = [
            {name: getattr(c, name) for name in c.__dataclass_fields__} for c in self.tool_calls
        ]
        data["page_shares"] = [
            {
                "page": p.page,
                "text_share": p.text_share,
                "image": p.image,
                "text_chars": p.text_chars,
                "seen_share": p.seen_share,
            }
            for p in self.page_shares
        ]
        data["usage"] = [u.to_dict() for u in self.usage]
        data["cached_tool_usage"] = [u.to_dict() for u in self.cached_tool_usage]
        data["cached_model_usage"] = [u.to_dict() for u in self.cached_model_usage]
        data["usage_totals"] = {role: t.to_dict() for role, t in totals_by_role(self.usage).items()}
        data["cost"] = self.cost.to_dict() if self.cost is not None else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["usage"] = tuple(Usage.from_dict(u) for u in data.get("usage", ()))
        values["cached_tool_usage"] = tuple(Usage.from_dict(u) for u in data.get("cached_tool_usage", ()))
        values["cached_model_usage"] = tuple(Usage.from_dict(u) for u in data.get("cached_model_usage", ()))
        cost = data.get("cost")
        values["cost"] = SampleCost.from_dict(cost) if isinstance(cost, Mapping) else None
        values["page_shares"] = tuple(
            PageShare(
                int(p["page"]),
                float(p["text_share"]),
                bool(p.get("image", False)),
                None if p.get("text_chars") is None else int(p["text_chars"]),
                None if p.get("seen_share") is None else float(p["seen_share"]),
            )
            for p in data.get("page_shares", ())
        )
        values.setdefault("version", 1)  # records before versioning was written were version 1
        values["tool_calls"] = tuple(ToolCallRecord(**c) for c in data.get("tool_calls", ()))
        for name in (
            "errors",
            "pages_read",
            "pages_seen",
            "sections_read",
            "evidence_pages",
            "evidence_sources",
        ):
            values[name] = tuple(data.get(name, ()))
        score = values.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
            # NaN fails the range test too: a score the scorer cannot have written
            raise ValueError(f"score must be a number from 0 to 1, got {score!r}")
        return cls(**values)
