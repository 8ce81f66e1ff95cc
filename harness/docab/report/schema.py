"""The report summary's schema: what ``summary.json`` holds, defined once for its writer
(``docab.report.summary.build_report``) and every reader (``render``, ``plots``, ``gate``, the viewer,
``docab compare``).

Conventions, for every model below:

- scores (accuracy, F1, evidence recall, shares) are fractions in [0, 1], never percent; a
  difference is always B − A, arm B against the reference arm A, per question;
- a number is None (JSON ``null``) where it is undefined: an interval from one document, a
  ratio without a usable pair, a median of nothing. NaN and infinities never reach the JSON;
- every interval is at ``Summary.confidence`` (95 %) and names its ``method``;
- tokens and seconds are per question, epochs averaged first, all roles unless a role is named.

Versions (``SUMMARY_VERSION``, the ``version`` field):

1. the untyped layout written before this module (``REPORT_VERSION`` 1 of ``docab.report.summary``);
2. this schema. From 1: every figure with an interval is an :class:`Estimate` ``{value, low, high,
   method}`` (differences said ``estimate``), bootstrap differences count ``undefined_resamples``
   (was ``undefined``); McNemar's ``b``/``c`` are ``only_a_correct``/``only_b_correct`` and sit in
   ``itt.accuracy``; the cost ratio is ``{value, low, high, method, pairs, excluded}`` (was
   ``ratio``, ``ratio_low``, ``ratio_high``, ``n``); evidence recall is grouped under ``evidence``
   (per arm) and ``itt.evidence`` (per comparison); ``mde``, ``mde_bounded`` and ``mde_statement``
   are ``itt.mde`` ``{observed, bounded, statement}``; ``pairs_dropped`` is ``sensitivity``.

Reading a file: :func:`parse_summary` (raises :class:`SummaryFormatError` with a message fit to show).

Adding a figure: give it a field, with a default when older writers lack it, on the model it
describes, fill it in ``docab.report.summary``, show it in ``docab.report.render``, and bump
``SUMMARY_VERSION`` (readers recompute a file of another version). Where figures belong: per arm
on :class:`ArmSummary` (a score on the answerable questions only is another :class:`Estimate`; an
arm's "Not answerable" answers a model of their own); evidence figures (precision, tokens per
evidence page found) on :class:`EvidenceSummary` and :class:`EvidenceComparison`; reference rows
that are not arms of the run (an "always Not answerable" policy) on :class:`Summary` beside
``arms``; another paired test beside ``mcnemar`` on :class:`AccuracyComparison`; the MDE stated
before the run beside ``observed`` on :class:`DetectableEffect`; counts of each status dropped on
:class:`Sensitivity`; counts per cell on :class:`BreakdownCell`. Every interval already names its
``method``, so a method chosen by the number of documents needs no new field. The gate
(``docab.report.gate``) reads typed figures into :class:`docab.report.gate.Check` rows, so a
further gated metric is one more row and a multiplicity adjustment a pass over the rows.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

SUMMARY_VERSION: Literal[2] = 2


def _finite_or_none(value: object) -> object:
    """NaN and infinities become None: an undefined figure, which JSON can carry."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


Number = Annotated[float | None, BeforeValidator(_finite_or_none)]
"""A float, or None where the figure is undefined (see the module docstring)."""

IntervalMethod = Literal["cluster-t", "korn-graubard", "clopper-pearson", "cluster-bootstrap", "none"]
"""How an interval was computed (``docab.report.stats``): ``none`` when it could not be."""

Dimension = Literal["evidence source", "evidence pages", "document type", "answer format", "answer path"]
"""What a breakdown slices questions by."""


class SchemaModel(BaseModel):
    """Frozen, and strict about its keys: a file with other fields is another layout, not this one."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# -- figures ----------------------------------------------------------------------------------------------


class Estimate(SchemaModel):
    """A figure with its interval."""

    value: Number
    low: Number
    high: Number
    method: IntervalMethod


class Difference(Estimate):
    """A paired difference B − A (a mean over the paired questions, or a difference of ratios such
    as F1), with its paired cluster-bootstrap interval over documents."""

    undefined_resamples: int = 0
    """Bootstrap resamples where the statistic was undefined (e.g. no answerable question drawn);
    the interval is taken over the others."""


class ClusteredDifference(Estimate):
    """The same mean difference with its document-clustered standard error and t interval on
    (documents − 1) degrees of freedom: a check on the bootstrap."""

    se: Number


class Spread(SchemaModel):
    """The distribution of a skewed per-question quantity (tokens, seconds, calls)."""

    n: int  # questions with a value
    mean: Number
    median: Number
    p90: Number


# -- per arm ----------------------------------------------------------------------------------------------


class StatusCounts(SchemaModel):
    """Records by status (``docab.log.records.Status``); every record counts once."""

    ok: int = 0
    error: int = 0
    timeout: int = 0
    limit: int = 0


class EvidenceSummary(SchemaModel):
    """How well an arm found the pages a question's answer is on."""

    questions: int  # questions listing gold evidence pages: the others have no recall
    recall: Estimate  # mean share of a question's gold evidence pages the agent read (cluster bootstrap)


class TokenSummary(SchemaModel):
    total: Spread  # every role: input including cache, plus output
    by_role: dict[str, Spread]  # agent, tool-side, extractor
    cache_read_share: Number  # share of all input tokens read from a provider's prompt cache
    first_call_input: (
        Spread  # input tokens of the first agent call: system prompt, tool definitions, question
    )
    tool_definition_tokens: (
        int | None
    )  # what the arm's tool definitions cost on every call (from the manifest)


class TimeSummary(SchemaModel):
    wall_s: Spread  # the agent loop and answer extraction, without set-up
    model_s: Spread  # model calls, retries included
    tool_s: Spread  # tool calls


class ToolUse(SchemaModel):
    calls: float  # calls of the tool over the arm's questions (epochs averaged)
    mean_s: Number  # mean duration of one call


class ToolCallSummary(SchemaModel):
    per_question: Spread
    by_name: dict[str, ToolUse]
    truncated: float  # tool results cut by the output budget (epochs averaged)


class ArmSummary(SchemaModel):
    """One arm of the run, every record counted (intention-to-treat: errors score 0)."""

    arm: str
    models: list[str]
    floor: bool  # an offline baseline policy, not a model: a floor
    label: str  # what to print beside a floor ("" otherwise)
    records: int
    questions: int
    documents: int
    epochs: int  # the most epochs any question had
    status: StatusCounts
    limits: dict[str, int]  # records stopped by each limit (turns, tokens, wall_time)
    accuracy: Estimate  # mean score; Korn-Graubard below 300 questions, clustered t above
    f1: Estimate  # MMLongBench-Doc's generalised F1, cluster bootstrap
    evidence: EvidenceSummary | None  # None when no question lists evidence pages
    tokens: TokenSummary
    time: TimeSummary
    turns: Spread  # model calls per question
    tool_calls: ToolCallSummary
    retries: int  # model-call retries over the arm's records
    answer_protocols: dict[str, int]  # records by answer path (submit_tool, extraction)


# -- paired comparisons -----------------------------------------------------------------------------------


class ScoreComparison(SchemaModel):
    """A score of both arms on the same questions, and their difference."""

    a: Number
    b: Number
    difference: Difference


class McNemar(SchemaModel):
    """Exact McNemar on binary correctness (score >= 0.5): a binomial test of the discordant pairs."""

    only_a_correct: int  # the test's b
    only_b_correct: int  # the test's c
    p_value: Number


class AccuracyComparison(ScoreComparison):
    difference_clustered_t: ClusteredDifference
    mcnemar: McNemar


class EvidenceComparison(SchemaModel):
    questions: int  # paired questions listing evidence pages
    recall: ScoreComparison


class Ratio(SchemaModel):
    """The paired geometric-mean ratio B / A of a cost, over pairs where both are positive."""

    value: Number
    low: Number
    high: Number
    method: IntervalMethod
    pairs: int  # pairs used
    excluded: int  # pairs with a zero or missing value on either side


class SignedRank(SchemaModel):
    """Wilcoxon signed-rank test on B − A (zero differences dropped)."""

    statistic: Number
    p_value: Number
    pairs: int  # pairs with a non-zero difference


class CostComparison(SchemaModel):
    """Tokens or seconds per question of both arms (A and B medians are the headline)."""

    a: Spread
    b: Spread
    difference: Difference  # mean of B − A
    ratio: Ratio
    wilcoxon: SignedRank


class DetectableEffect(SchemaModel):
    """The smallest accuracy difference this run could resolve (80 % power, two-sided alpha 0.05)."""

    observed: Number  # from the run's own variance of differences and ICC; None with one document
    bounded: bool  # the variance was 0, so an upper bound of it was used (see ``statement``)
    statement: str  # the sentence the report prints


class PairedResults(SchemaModel):
    """Every paired statistic of one comparison over the questions both arms ran."""

    questions: int
    documents: int  # clusters: every interval resamples documents
    accuracy: AccuracyComparison
    f1: ScoreComparison
    evidence: EvidenceComparison | None  # None when no paired question lists evidence pages
    score_correlation: Number  # Pearson r of the arms' per-question scores
    tokens: CostComparison
    latency: CostComparison  # wall seconds
    icc: Number  # intraclass correlation of the differences within documents
    mde: DetectableEffect


class Sensitivity(SchemaModel):
    """The comparison again without the pairs where either arm had an error or a timeout."""

    dropped: int
    paired: int  # pairs kept
    accuracy: AccuracyComparison | None = None  # None when nothing was dropped or nothing kept
    f1: ScoreComparison | None = None
    note: str = ""  # why there are no figures


class Comparison(SchemaModel):
    """Arm B against the reference arm A, question by question."""

    a: str
    b: str
    questions_a: int
    questions_b: int
    paired: int  # questions both arms ran
    note: str = ""  # why nothing is compared (then every part below is None)
    itt: PairedResults | None = None  # intention-to-treat: every paired question, errors scoring 0
    sensitivity: Sensitivity | None = None
    first_call_input_difference: Spread | None = None  # B − A: the cost of extra tool definitions per call


# -- breakdowns -------------------------------------------------------------------------------------------


class BreakdownCell(SchemaModel):
    n: int  # the arm's questions in the group
    accuracy: Number


class BreakdownDifference(Difference):
    n: int  # questions of the group both arms ran


class Breakdown(SchemaModel):
    """Accuracy of every arm on one group of questions; a question can count in several groups."""

    dimension: Dimension
    group: str
    arms: dict[str, BreakdownCell]
    differences: dict[str, BreakdownDifference]  # per arm against the reference; none for "answer path"


# -- the summary ------------------------------------------------------------------------------------------


class Summary(SchemaModel):
    """A run's report: ``summary.json``."""

    version: Literal[2] = SUMMARY_VERSION
    runs: list[str]  # the run folders it was computed from
    run_id: str
    floor: bool  # an arm is an offline baseline policy
    label: str
    reference_arm: str
    confidence: float  # of every interval
    resamples: int  # bootstrap resamples
    seed: int
    arms: list[ArmSummary]  # the reference arm first
    comparisons: list[Comparison]  # each other arm against the reference
    breakdowns: list[Breakdown]  # empty when not computed (docab compare)
    warnings: list[str]

    def arm(self, name: str) -> ArmSummary | None:
        return next((a for a in self.arms if a.arm == name), None)


class SummaryFormatError(ValueError):
    """Text that is not a summary of this version. The message completes a sentence about the file:
    ``f"summary.json {error}"`` (``is not JSON``, ``is of schema version 1 ...``, ``has another layout ...``)."""


def parse_summary(text: str | bytes) -> Summary:
    """A ``summary.json``'s text as a :class:`Summary`; raises :class:`SummaryFormatError`."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SummaryFormatError("is not JSON") from None
    if not isinstance(data, dict):
        raise SummaryFormatError("has another layout (not a JSON object)")
    version = data.get("version")
    if version is None:
        raise SummaryFormatError("has another layout (no schema version)")
    if version != SUMMARY_VERSION:
        raise SummaryFormatError(
            f"is of schema version {version!r} (this docab reads version {SUMMARY_VERSION})"
        )
    try:
        return Summary.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise SummaryFormatError(
            f"has another layout ({exc.error_count()} problem(s), the first at {where}: {first['msg']})"
        ) from None
