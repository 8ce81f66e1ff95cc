"""The report summary's schema: what ``summary.json`` holds, defined once for its writer
(``docab.report.summary.build_report``) and every reader (``render``, ``plots``, ``gate``, the viewer,
``docab compare``).

Conventions, for every model below:

- scores (accuracy, F1, evidence recall, shares) are fractions in [0, 1], never percent; a
  difference is always B − A, arm B against the reference arm A, per question;
- a number is None (JSON ``null``) where it is undefined: an interval from one document, a
  ratio without a usable pair, a median of nothing. NaN and infinities never reach the JSON;
- every interval is at ``Summary.confidence`` (95 %) and names its ``method``;
- tokens, seconds and US dollars are per question, epochs averaged first, all roles unless a role
  is named.

Versions (``SUMMARY_VERSION``, the ``version`` field):

1. the untyped layout written before the typed schema;
2. the typed schema with paired cluster-bootstrap intervals (``undefined_resamples``,
   ``difference_clustered_t``, ``resamples``, ``seed``);
3. issue 13: every interval is the cluster-robust t (``cluster-t-cr3``) or, for an
   arm's proportion on few questions, Korn-Graubard; a :class:`Difference` carries ``se``, ``df``
   and ``p_value``; the headline test is ``clustered_mcnemar``, plain McNemar is
   ``mcnemar_ignoring_documents``; arms gain ``answerable_accuracy``, ``not_answerable`` and
   evidence ``precision`` and ``tokens_per_evidence_page``; comparisons gain ``answerable`` and
   evidence ``precision``; the MDE is ``{planned, observed, resolvable, bounded, statement}``; the
   sensitivity view drops every non-ok status and counts them (``dropped_by_status``);
   ``reference_rows`` and ``breakdown_note`` are new; ``resamples`` and ``seed`` are gone.
4. issue 24: evidence ``recall`` counts pages read calls opened (no longer pages
   only search results showed) and ``recall_seen`` counts search results too; below 30 documents
   paired differences and ratios use the sign-flip test (method ``sign-flip``, ``sign_flip``);
   ``prompt_cache`` compares tokens under each provider's prompt caching (estimates).
5. this schema (issue 28): US dollars: an arm's ``cost``, a comparison's ``cost`` (B/A ratio with
   its interval, as for tokens) and the summary's ``prices`` (each model's price, source and date).
   Also (issue 23, optional, defaulting to zeros): an arm's ``extraction`` counts the answer
   extraction's unparsable replies and the prose answers taken through it.
   Later, optionally, ``plan``: a pilot projected to its full question set (``docab plan``);
   ``unrecorded_usd``; ``interrupted_calls`` and ``interrupted_usd`` (calls a kill cut short in
   flight, at the most they can have cost); and ``version_changes``: the sessions that ran with other package versions
   or another docab commit than the run's first session, and what differs (the manifest's own
   types, :class:`docab.log.manifest.SessionVersions`).

Reading a file: :func:`parse_summary` (raises :class:`SummaryFormatError` with a message fit to show).

Adding a figure: give it a field on the model it describes, fill it in ``docab.report.summary``,
show it in ``docab.report.render``, and bump ``SUMMARY_VERSION`` (readers recompute a file of
another version). The gate (``docab.report.gate``) reads typed figures into
:class:`docab.report.gate.Check` rows, so a further gated metric is one more row.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from docab.log.manifest import SessionVersions

SUMMARY_VERSION: Literal[5] = 5


def _finite_or_none(value: object) -> object:
    """NaN and infinities become None: an undefined figure, which JSON can carry."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


Number = Annotated[float | None, BeforeValidator(_finite_or_none)]
"""A float, or None where the figure is undefined (see the module docstring)."""

IntervalMethod = Literal["cluster-t-cr3", "sign-flip", "korn-graubard", "clopper-pearson", "none"]
"""How an interval was computed (``docab.report.stats``): ``cluster-t-cr3`` the cluster-robust t
(CR3 variance, Bell-McCaffrey degrees of freedom); ``korn-graubard`` exact-type for an arm's
proportion on few questions; ``none`` when it could not be computed (one document)."""

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


class SignFlipData(SchemaModel):
    """What the sign-flip test of a difference on few documents needs to be redone (by the gate at
    its own bounds): each document's summed influence at the estimate and its weight
    (``docab.report.signflip``)."""

    influence: list[float]
    weights: list[float]


class Difference(Estimate):
    """A paired difference B − A (a mean over the paired questions, or a difference of ratios such
    as F1, linearised), with its cluster-robust t interval over documents."""

    se: Number  # its standard error (0 when no document's contribution varies; None with one document)
    df: Number  # the t distribution's degrees of freedom (Bell-McCaffrey)
    p_value: Number  # two-sided, of no difference (the exact sign test's when se is 0)
    documents: int = 0  # documents behind it: the clusters of its inference
    sign_flip: SignFlipData | None = None  # below 30 documents: its p-values are the sign-flip test's


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
    """How well an arm found the pages a question's answer is on, over the questions listing gold
    evidence pages. A page counts as read only when a read call showed most of it or its page
    image (``docab.agent.evidence``), never for its heading, an image reference or search results
    alone; ``recall_seen`` counts what search results showed too."""

    questions: int  # questions listing gold evidence pages: the others have no recall
    recall: Estimate  # mean share of a question's gold evidence pages read calls opened
    recall_seen: Estimate | None = None  # the same, search results counted too
    precision: Estimate | None  # share of the pages read that are evidence pages; None when none read
    tokens_per_evidence_page: Number  # all tokens over evidence pages found; None when none found


class ExtractionSummary(SchemaModel):
    """The benchmark's answer extraction in an arm (role ``extractor``): how many records it ran
    on (``of``), how many of its replies could not be parsed (``failed``: the record is ``ok``,
    its answer "Failed to extract", score 0), and how many were a ``submit_tool`` sample's prose
    answer taken through it after the model never submitted (``prose_fallback``)."""

    of: int = 0
    failed: int = 0
    prose_fallback: int = 0

    @property
    def failed_share(self) -> float:
        return self.failed / self.of if self.of else 0.0


class NotAnswerableSummary(SchemaModel):
    """How an arm used the answer "Not answerable" (epochs averaged per question)."""

    answered: float  # share of questions answered "Not answerable"
    correct: Number  # share of those answers whose gold is "Not answerable"; None when never answered
    found: Number  # share of the unanswerable questions answered so; None when the set has none


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


class CostSummary(SchemaModel):
    """What an arm's model calls cost in US dollars (``docab.pricing``), per question epochs
    averaged. Calls of a model without a known price count in no figure: ``unpriced`` names them,
    and ``total`` and ``per_question`` are then None rather than a silent 0."""

    total: Number  # USD over every record of the arm; None when a price is unknown
    per_question: Spread | None  # USD per question; None when a price is unknown
    by_role: dict[str, float]  # USD over the arm's records per role, priced calls only
    unpriced: list[str]  # models whose calls have no known price
    saved_by_cache: float  # USD that answers served from a cache cost when first computed
    uncached_total: Number  # total + saved_by_cache: what the run would cost without the caches


class PriceRow(SchemaModel):
    """The price a model's calls were charged (USD per million tokens) and where it comes from."""

    model: str
    origin: Literal["config", "offline policy", "local server", "table", "unknown"]
    input: Number = None
    cached_input: Number = None
    cache_write: Number = None
    output: Number = None
    source: str = ""
    date: str = ""
    note: str = ""


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
    accuracy: Estimate  # mean score; Korn-Graubard below 300 questions, cluster-robust t above
    answerable_questions: int  # questions whose gold answer is not "Not answerable"
    answerable_accuracy: Estimate  # mean score on those alone (None value when there are none)
    f1: Estimate  # MMLongBench-Doc's generalised F1 (2S / (NA + NP)), linearised cluster-robust t
    not_answerable: NotAnswerableSummary
    evidence: EvidenceSummary | None  # None when no question lists evidence pages
    tokens: TokenSummary
    time: TimeSummary
    turns: Spread  # model calls per question
    tool_calls: ToolCallSummary
    retries: int  # model-call retries over the arm's records
    answer_protocols: dict[str, int]  # records by answer path (submit_tool, extraction)
    cost: CostSummary | None = None  # USD (version 5 on)
    # The answer extraction's failures and prose fallbacks; optional (summaries written before it read as 0).
    extraction: ExtractionSummary = ExtractionSummary()


# -- paired comparisons -----------------------------------------------------------------------------------


class ScoreComparison(SchemaModel):
    """A score of both arms on the same questions, and their difference."""

    a: Number
    b: Number
    difference: Difference


class McNemar(SchemaModel):
    """Exact McNemar on binary correctness (score >= 0.5): a binomial test of the discordant pairs.
    It ignores documents, so its false-positive rate is far above 5 % when questions cluster: shown
    only labelled so, never as the headline test."""

    only_a_correct: int  # the test's b
    only_b_correct: int  # the test's c
    p_value: Number


class ClusteredMcNemar(SchemaModel):
    """McNemar's comparison of paired correctness with documents as clusters (Obuchowski 1998): the
    mean of (B correct) − (A correct) tested with the cluster-robust t. The headline test."""

    only_a_correct: int
    only_b_correct: int
    statistic: Number  # t
    df: Number
    p_value: Number  # two-sided


class AccuracyComparison(ScoreComparison):
    clustered_mcnemar: ClusteredMcNemar
    mcnemar_ignoring_documents: McNemar


class EvidenceComparison(SchemaModel):
    questions: int  # paired questions listing evidence pages
    recall: ScoreComparison
    precision: ScoreComparison | None  # None when an arm read no page on these questions


class Ratio(SchemaModel):
    """The paired geometric-mean ratio B / A of a cost, over pairs where both are positive: the mean
    of log(B / A) with its cluster-robust t interval, mapped back by exp."""

    value: Number
    low: Number
    high: Number
    method: IntervalMethod
    log_se: Number  # standard error of the mean log ratio
    df: Number
    documents: int = 0
    sign_flip: SignFlipData | None = None  # below 30 documents, of the mean log ratio
    pairs: int  # pairs used
    excluded: int  # pairs with a zero or missing value on either side


class SignedRank(SchemaModel):
    """Wilcoxon signed-rank test on B − A of per-document mean costs (zero differences dropped)."""

    statistic: Number
    p_value: Number
    pairs: int  # documents with a non-zero difference


class CostComparison(SchemaModel):
    """Tokens or seconds per question of both arms (A and B medians are the headline)."""

    a: Spread
    b: Spread
    difference: Difference  # mean of B − A
    ratio: Ratio
    wilcoxon: SignedRank


class DetectableEffect(SchemaModel):
    """The smallest accuracy difference this run could resolve (80 % power, two-sided alpha 0.05).

    ``planned`` follows from stated assumptions (``docab.report.stats.PlanningAssumptions``: 30 %
    of answers differing between arms, ICC 0.1) at this run's questions and questions per document;
    ``observed`` from the run's own standard error. The report claims ``resolvable``, the larger of
    the two: two near-identical arms make the observed figure meaninglessly small."""

    planned: Number
    observed: Number  # None with one document
    resolvable: Number
    bounded: bool  # the arms never differed: the observed figure uses an upper bound of Var(d)
    statement: str  # the sentence the report prints


class AnswerableComparison(ScoreComparison):
    """Accuracy on the paired questions whose gold answer is not "Not answerable"."""

    questions: int


class PromptCacheEstimate(SchemaModel):
    """The token comparison with one provider's prompt caching applied to every agent call: input-
    equivalent tokens (cached input at the provider's read price, cache writes at its write price),
    an estimate (``docab.report.prompt_cache``)."""

    rule: str  # anthropic, openai
    source: str  # where the rule is documented, and when it was read
    tokens: CostComparison


class PairedResults(SchemaModel):
    """Every paired statistic of one comparison over the questions both arms ran."""

    questions: int
    documents: int  # clusters: every interval treats documents as the unit
    accuracy: AccuracyComparison
    answerable: AnswerableComparison
    f1: ScoreComparison
    evidence: EvidenceComparison | None  # None when no paired question lists evidence pages
    score_correlation: Number  # Pearson r of the arms' per-question scores
    tokens: CostComparison
    latency: CostComparison  # wall seconds
    icc: Number  # intraclass correlation of the differences within documents
    mde: DetectableEffect
    # tokens again under each provider's prompt caching (estimates; uncached: ``tokens``)
    prompt_cache: list[PromptCacheEstimate] = []
    tokens_estimated: bool = False  # token counts are the offline policy's estimates
    cost: CostComparison | None = None  # USD per question; None when a price is unknown (version 5 on)


class DroppedStatus(SchemaModel):
    """Paired questions dropped from the sensitivity view, by the status that dropped them (a pair
    counts once, under the first of error, timeout, limit found in either arm)."""

    error: int = 0
    timeout: int = 0
    limit: int = 0


class Sensitivity(SchemaModel):
    """The comparison again without every pair where either arm did not finish normally (status
    error, timeout or limit)."""

    dropped: int
    dropped_by_status: DroppedStatus
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


# -- reference rows ---------------------------------------------------------------------------------------


class ReferenceRow(SchemaModel):
    """A policy that is not an arm of the run, scored on the run's questions, so an arm's figures
    can be read against it (an arm below "always Not answerable" has learnt nothing)."""

    name: str
    description: str
    questions: int
    accuracy: float
    answerable_accuracy: Number
    f1: float


# -- breakdowns -------------------------------------------------------------------------------------------


class BreakdownCell(SchemaModel):
    n: int  # the arm's questions in the group
    accuracy: Number


class BreakdownDifference(SchemaModel):
    """B − A on the group's paired questions; an interval only when the group spans at least
    ``docab.report.breakdowns.MIN_DOCUMENTS_FOR_INTERVAL`` documents (else ``note`` says so).
    Intervals are unadjusted for the number of cells."""

    n: int  # questions of the group both arms ran
    documents: int
    value: Number
    low: Number = None
    high: Number = None
    method: IntervalMethod = "none"
    note: str = ""


class Breakdown(SchemaModel):
    """Accuracy of every arm on one group of questions; a question can count in several groups."""

    dimension: Dimension
    group: str
    arms: dict[str, BreakdownCell]
    differences: dict[str, BreakdownDifference]  # per arm against the reference; none for "answer path"


class Projected(SchemaModel):
    """A projected total (US dollars or seconds) with its 95 % interval (``docab.report.plan``)."""

    value: Number
    low: Number = None  # None when the pilot cannot bound it (one document)
    high: Number = None


class PlanSize(SchemaModel):
    """What a run of one size is projected to cost, take and resolve (``docab plan``)."""

    questions: int
    documents: int
    samples: int  # questions x arms x epochs
    cost: Projected | None = None  # USD of the whole run; None when a price is unknown
    cost_to_go: Projected | None = None  # USD still to spend when the pilot's folder is extended to it
    wall_s: Projected  # elapsed seconds at the planned concurrency and rate limits
    mde: Number  # the accuracy difference it detects (80 % power, two-sided alpha 0.05)


class Plan(SchemaModel):
    """A pilot run projected to a full run (``docab plan``, ``docab.report.plan``): cost with its
    interval, wall time, and the minimum detectable effect, with where each assumption comes from."""

    pilot_questions: int
    pilot_documents: int
    pilot_samples: int
    pilot_cost: Number = None  # USD of the pilot's calls, cached ones at their first cost; None when unpriced
    pilot_wall_s: Number = None  # the pilot's measured elapsed time; None when no session finished
    arms: list[str]
    compared: list[str]  # the two arms whose accuracy difference the MDE is about ([] with one arm)
    epochs: int
    concurrency: int  # samples in flight in the projected run
    time_limited_by: str  # "workers", "endpoint concurrency", "rpm" or "tpm"
    overhead: float  # measured busy time over the samples' own time: set-up, waiting, the tail
    startup_s: float  # the pilot's time before its first sample started, added once
    discordance: float  # Var(B − A) per question under no difference (right/wrong: the share differing)
    discordance_source: Literal["pilot", "pilot bound", "default"]
    icc: float  # of the differences within documents
    icc_source: Literal["pilot", "default"]
    alpha: float
    power: float
    full: PlanSize  # the run planned: the dataset's questions, or --questions/--documents
    target_mde: Number = None  # --mde, as a fraction
    for_target: PlanSize | None = None  # the smallest run that detects target_mde
    unpriced: list[str] = []  # models without a known price: no cost figure
    notes: list[str] = []


class Summary(SchemaModel):
    """A run's report: ``summary.json``."""

    version: Literal[5] = SUMMARY_VERSION
    runs: list[str]  # the run folders it was computed from
    run_id: str
    floor: bool  # an arm is an offline baseline policy
    label: str
    reference_arm: str
    confidence: float  # of every interval
    arms: list[ArmSummary]  # the reference arm first
    reference_rows: list[ReferenceRow]  # policies that are not arms, on the same questions
    comparisons: list[Comparison]  # each other arm against the reference
    breakdowns: list[Breakdown]  # empty when not computed (docab compare)
    breakdown_note: str  # how many cells, and that their intervals are unadjusted
    warnings: list[str]
    prices: list[PriceRow] = []  # the price of every model the records used (version 5 on)
    # USD billed for samples without a record (cut short, run again): the run's spend.jsonl less
    # what its records cost; 0 for runs without a journal. Not part of any arm's cost.
    unrecorded_usd: float = 0.0
    # Calls in flight when a session was killed (SIGKILL, a power loss): journaled in spend.jsonl
    # as sent, never as returned, so the provider may have billed them; ``interrupted_usd`` is the
    # most they can have cost (each call's input and max output tokens at its price). Not part of
    # ``unrecorded_usd`` nor of any arm's cost; 0 for runs without such calls (docab.log.spend_journal).
    interrupted_calls: int = 0
    interrupted_usd: float = 0.0
    plan: Plan | None = None  # a pilot's projection to its full question set (docab plan; optional)
    # the sessions (a merged run's parts' too) whose package versions or docab commit differ from the
    # run's first session's, with what differs; empty when none do or the manifest does not say
    version_changes: list[SessionVersions] = []

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
