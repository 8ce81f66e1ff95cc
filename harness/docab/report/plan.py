"""``docab plan``'s core: a pilot run projected to a full run. Pure functions on plain data.

From a pilot (any run; typically ``docab run --limit 40``, which spreads its questions over the
documents) and the size of the run planned (the config's full question set, or a number of
questions and documents), three figures:

- **Cost (USD)**: per arm, the mean cost of a sample (epochs averaged) over the pilot questions
  that arm ran, summed over the arms: the cost of a question run in every arm. A question the pilot
  ran in only some arms (stopped by its spend cap, a kill, a Ctrl-C or the breaker) counts for
  those arms only, and the samples it lacks are still to run. With its cluster-robust standard
  error (CR3, documents as clusters: :func:`docab.report.stats.linearised_t`, on the estimate's
  linearisation), scaled to N questions x epochs. The interval is for the *realised* total of the planned set, a
  finite population the pilot is a sample of: the error of N x mean is N x SE x sqrt(1 - n/N) (the
  finite-population correction), so a pilot of the whole set has no uncertainty left and a small
  one has the uncertainty of its mean plus that of the questions not yet run. What extending the
  pilot's folder to N still costs (the pilot's records stand) carries the same error.
- **Wall time** at the planned concurrency: the samples' own time (``wall_time_s``, every arm of a
  question back to back, as the runner does) over the workers, times the pilot's measured overhead
  (its busy time, from its first sample's start to its end, over its samples' time per worker: the
  set-up of workspaces and servers, waits, the tail), plus the pilot's start-up once. Endpoint
  concurrency and rate limits (``rpm``, ``tpm``) bound it from below by model time, calls and
  tokens; the largest bound is the projection and is named. Per arm, and its interval, as the cost.
- **Minimum detectable effect** of accuracy (B − A): the report's cluster-aware planned MDE
  (:class:`docab.report.stats.PlanningAssumptions`, design effect with the planned questions per
  document and the spread of document sizes, t on documents − 1 degrees of freedom), with the
  pilot's discordance (mean squared difference per question: under no difference, its variance;
  for right/wrong scores, the share of answers differing) once the pilot spans
  :data:`MIN_DOCUMENTS_FOR_DISCORDANCE` documents, and its ICC once
  :data:`MIN_DOCUMENTS_FOR_ICC` documents hold two or more of its questions; the defaults
  otherwise. Each figure says which. The reverse: the fewest questions whose MDE is at most a target.

Nothing here reads files or prints: ``docab.cli.plan`` loads the pilot and the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
from scipy import stats as sps

from docab.log.manifest import Manifest
from docab.log.records import RunRecord
from docab.report import schema, stats
from docab.report.outcomes import QuestionOutcome

MIN_DOCUMENTS_FOR_DISCORDANCE = 10  # below this the pilot's discordance is too noisy to plan with
MIN_DOCUMENTS_FOR_ICC = 10  # documents with two or more pilot questions, for an ICC

DiscordanceSource = Literal["pilot", "pilot bound", "default"]
IccSource = Literal["pilot", "default"]


@dataclass(frozen=True)
class ArmFigures:
    """One arm on one question of the pilot, one epoch (epochs averaged)."""

    arm: str
    cost_usd: float  # uncached; NaN when a price is unknown
    wall_s: float  # the sample's own time (agent loop and extraction)
    model_s: float
    calls: float  # model calls
    tokens: float


@dataclass(frozen=True)
class PilotQuestion:
    """One question of the pilot: the figures of each arm that ran it; sums over them below."""

    qid: str
    doc_id: str
    by_arm: tuple[ArmFigures, ...]  # the arms that ran it (a stopped pilot may lack some)
    difference: float = math.nan  # score B − A of the compared arms; NaN when not paired

    @property
    def arms(self) -> tuple[str, ...]:
        return tuple(f.arm for f in self.by_arm)

    @property
    def cost_usd(self) -> float:
        return sum(f.cost_usd for f in self.by_arm)

    @property
    def wall_s(self) -> float:
        """The samples' own time, arms back to back."""
        return sum(f.wall_s for f in self.by_arm)


@dataclass(frozen=True)
class Pilot:
    questions: tuple[PilotQuestion, ...]
    arms: tuple[str, ...]
    compared: tuple[str, str] | None  # (A, B): the arms the MDE is about
    epochs: int = 1
    concurrency: int = 4  # the pilot's workers
    busy_s: float | None = None  # from its first sample's start to its end (finished sessions)
    startup_s: float = 0.0  # from the session's start to its first sample's
    unpriced: tuple[str, ...] = ()

    @property
    def documents(self) -> int:
        return len({q.doc_id for q in self.questions})

    @property
    def samples(self) -> int:
        """The samples the pilot ran (a question lacking an arm lacks its samples)."""
        return sum(self.ran(arm) for arm in self.arms) * self.epochs

    def ran(self, arm: str) -> int:
        """The pilot questions ``arm`` ran."""
        return sum(arm in q.arms for q in self.questions)

    @property
    def partial(self) -> int:
        """Pilot questions run in only some of the arms."""
        return sum(any(arm not in q.arms for arm in self.arms) for q in self.questions)


@dataclass(frozen=True)
class Target:
    """The run planned."""

    questions: int
    documents: int
    document_sizes: tuple[int, ...] = ()  # questions per document when known (their spread)
    epochs: int = 1
    concurrency: int = 4
    endpoint_concurrency: int | None = None  # model calls in flight at the endpoint
    rpm: float | None = None  # requests per minute the endpoint allows
    tpm: float | None = None  # tokens per minute
    extends_pilot: bool = True  # the pilot's questions are among the planned ones


# -- from a run ---------------------------------------------------------------------------------------


def pilot_questions(
    outcomes: Mapping[str, Mapping[str, QuestionOutcome]], compared: tuple[str, str] | None
) -> tuple[PilotQuestion, ...]:
    """Per question of any arm: the figures of each arm that ran it (the cost as if nothing came
    from a cache); the compared arms' score difference."""
    order: dict[str, str] = {}
    for by_question in outcomes.values():
        for qid, outcome in by_question.items():
            order.setdefault(qid, outcome.doc_id)
    found = []
    for qid, doc_id in order.items():
        present = [(arm, by_question[qid]) for arm, by_question in outcomes.items() if qid in by_question]
        gap = math.nan
        if compared is not None:
            a, b = (outcomes.get(arm, {}).get(qid) for arm in compared)
            if a is not None and b is not None:
                gap = b.score - a.score
        found.append(
            PilotQuestion(
                qid=qid,
                doc_id=doc_id,
                by_arm=tuple(
                    ArmFigures(
                        arm=arm,
                        # uncached: a reply or tool answer the pilot was served from a cache costs
                        # the questions not yet run what it cost when first made
                        cost_usd=o.cost_usd + o.cost_saved_usd,
                        wall_s=o.wall_time_s,
                        model_s=o.model_time_s,
                        calls=o.turns,
                        tokens=o.tokens,
                    )
                    for arm, o in present
                ),
                difference=gap,
            )
        )
    return tuple(found)


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def pilot_timing(manifest: Manifest, records: Sequence[RunRecord]) -> tuple[float | None, float]:
    """(busy seconds, start-up seconds) of the run's finished sessions: busy from the first sample
    started in a session to its end, start-up from its start to that sample. (None, 0) when no
    session finished with a sample in it (a killed run: its elapsed time is unknown)."""
    starts = sorted(t for r in records if (t := _when(r.started_at)) is not None)
    busy, startup, counted = 0.0, 0.0, False
    for session in manifest.sessions:
        begun, ended = _when(session.started_at), _when(session.finished_at)
        if begun is None or ended is None:
            continue
        inside = [t for t in starts if begun <= t <= ended]
        if not inside:
            continue
        counted = True
        busy += (ended - inside[0]).total_seconds()
        startup = max(startup, (inside[0] - begun).total_seconds())
    return (busy, startup) if counted else (None, 0.0)


# -- projection -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scaled:
    """A per-question mean scaled to a total: value, and its 95 % interval's half width."""

    mean: float
    half_width: float  # on the mean, before scaling; NaN when there is no interval

    def total(self, count: float) -> schema.Projected:
        value = self.mean * count
        if not math.isfinite(self.half_width):
            return schema.Projected(value=value)
        half = self.half_width * count
        return schema.Projected(value=value, low=max(0.0, value - half), high=value + half)


def scaled_mean(values: Sequence[float], documents: Sequence[str], population: int) -> Scaled:
    """The mean of ``values`` (per pilot question) with the half width of a 95 % cluster-robust t
    interval, corrected for the finite population of ``population`` questions the pilot is drawn
    from (no width when the pilot covers them all)."""
    return scaled_arms([{"": v} for v in values], documents, population, {"": 1.0})


def scaled_arms(
    values: Sequence[Mapping[str, float]],
    documents: Sequence[str],
    population: int,
    weights: Mapping[str, float],
) -> Scaled:
    """Sum over the arms of ``weights`` of weight x the arm's mean per sample, each arm's mean over
    the pilot questions it ran (``values``: per question, the figure of each arm that ran it), with
    the half width of a 95 % cluster-robust t interval on the estimate's linearisation, corrected
    for the finite population of ``population`` questions (as :func:`scaled_mean`, which it is for
    one arm of weight 1). NaN when an arm has no sample or a figure is not finite."""
    n = len(values)
    means: dict[str, float] = {}
    counts: dict[str, int] = {}
    for arm in weights:
        x = np.asarray([row[arm] for row in values if arm in row], dtype=np.float64)
        if x.size == 0 or not np.isfinite(x).all():
            return Scaled(math.nan, math.nan)
        means[arm], counts[arm] = float(x.mean()), int(x.size)
    estimate = sum(weights[arm] * means[arm] for arm in weights)
    # the estimate's influence per question, on the scale of the estimate times n (stats.linearised_t)
    influence = np.asarray(
        [
            n * sum(weights[a] * (v - means[a]) / counts[a] for a, v in row.items() if a in weights)
            for row in values
        ],
        dtype=np.float64,
    )
    test = stats.linearised_t(
        influence, np.ones(n), np.asarray(documents, dtype=object), estimate, sign_flip_below=0
    )
    fpc = math.sqrt(max(0.0, 1.0 - n / population)) if population > 0 else 1.0
    if test.se == 0 or fpc == 0:
        return Scaled(estimate, 0.0)
    if not (math.isfinite(test.se) and math.isfinite(test.df)):
        return Scaled(estimate, math.nan)
    return Scaled(estimate, float(sps.t.ppf(0.5 + stats.CONFIDENCE / 2, test.df)) * test.se * fpc)


def _per_arm(pilot: Pilot, figure: Callable[[ArmFigures], float]) -> list[dict[str, float]]:
    """Per pilot question, ``figure`` of each of the pilot's arms that ran it."""
    return [{f.arm: figure(f) for f in q.by_arm if f.arm in pilot.arms} for q in pilot.questions]


def _overhead(pilot: Pilot) -> float:
    """Busy time per worker over the samples' own time (at least 1)."""
    own = sum(q.wall_s for q in pilot.questions) * pilot.epochs
    units = len(pilot.questions) * pilot.epochs
    workers = max(1, min(pilot.concurrency, units))
    if pilot.busy_s is None or own <= 0:
        return 1.0
    return max(1.0, pilot.busy_s * workers / own)


def assumptions(
    pilot: Pilot, defaults: stats.PlanningAssumptions | None = None
) -> tuple[stats.PlanningAssumptions, DiscordanceSource, IccSource, list[str]]:
    """The planning assumptions: the pilot's discordance and ICC where it spans enough documents,
    the defaults otherwise; with the source of each and notes saying why."""
    plan = defaults or stats.PlanningAssumptions()
    notes: list[str] = []
    paired = [q for q in pilot.questions if math.isfinite(q.difference)]
    docs = len({q.doc_id for q in paired})
    discordance: float = plan.discordance
    discordance_source: DiscordanceSource = "default"
    icc: float = plan.icc
    icc_source: IccSource = "default"
    if pilot.compared is None:
        notes.append("the pilot has one arm: the MDE uses the default discordance and ICC")
    elif docs < MIN_DOCUMENTS_FOR_DISCORDANCE:
        notes.append(
            f"the pilot's paired questions span {docs} document{'s' * (docs != 1)} "
            f"(fewer than {MIN_DOCUMENTS_FOR_DISCORDANCE}): the MDE uses the default discordance "
            f"{plan.discordance:g} and ICC {plan.icc:g}"
        )
    else:
        d = np.array([q.difference for q in paired])
        observed = float(np.mean(d**2))
        if observed > 0:
            discordance, discordance_source = observed, "pilot"
        else:
            discordance, discordance_source = min(1.0, 3.0 / d.size), "pilot bound"
            notes.append(
                "no pilot question's score differed between the arms: the discordance is its 95 % "
                f"upper bound, 3/n = {discordance:.3f} (rule of three)"
            )
        clusters = [q.doc_id for q in paired]
        sizes = {c: clusters.count(c) for c in set(clusters)}
        repeated = sum(n >= 2 for n in sizes.values())
        if repeated >= MIN_DOCUMENTS_FOR_ICC:
            found = stats.icc_oneway(d, np.array(clusters, dtype=object))
            if math.isfinite(found):
                icc, icc_source = found, "pilot"
        if icc_source == "default":
            notes.append(
                f"{repeated} pilot document{'s' * (repeated != 1)} hold two or more questions "
                f"(fewer than {MIN_DOCUMENTS_FOR_ICC}): the MDE uses the default ICC {plan.icc:g}"
            )
    chosen = stats.PlanningAssumptions(
        discordance=discordance,
        questions_per_document=plan.questions_per_document,
        icc=icc,
        alpha=plan.alpha,
        power=plan.power,
    )
    return chosen, discordance_source, icc_source, notes


def _size_cv(sizes: Sequence[int]) -> float:
    array = np.asarray(sizes, dtype=np.float64)
    return float(array.std() / array.mean()) if array.size and array.mean() > 0 else 0.0


def mde_at(plan: stats.PlanningAssumptions, questions: int, documents: int, size_cv: float) -> float:
    if questions <= 0 or documents <= 0:
        return math.nan
    return plan.mde(questions, questions / documents, size_cv=size_cv, documents=documents)


def questions_for(plan: stats.PlanningAssumptions, target: float, per_document: float, size_cv: float) -> int:
    """The fewest questions whose MDE (:func:`mde_at`, documents of ``per_document`` questions)
    is at most ``target``: :func:`docab.report.stats.required_questions` (normal quantiles), then
    the smallest n at or above it that the t quantiles on its documents confirm."""

    def resolves(n: int) -> bool:
        documents = max(2, math.ceil(n / per_document))
        return mde_at(plan, n, documents, size_cv) <= target

    low = max(
        2,
        stats.required_questions(
            target,
            plan.discordance,
            questions_per_document=per_document,
            icc=plan.icc,
            alpha=plan.alpha,
            power=plan.power,
        ),
    )
    if resolves(low):
        return low
    high = low * 2
    while not resolves(high):
        high *= 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if resolves(middle) else (middle, high)
    return high


def project_size(
    pilot: Pilot,
    target: Target,
    questions: int,
    documents: int,
    plan: stats.PlanningAssumptions,
    size_cv: float,
) -> tuple[schema.PlanSize, str]:
    """One planned size: cost, cost to go, wall time (and what bounds it), MDE."""
    docs = [q.doc_id for q in pilot.questions]
    epochs = target.epochs
    runs = questions * epochs  # units of work: one question, one epoch, every arm
    every = dict.fromkeys(pilot.arms, 1.0)  # per question: every arm's mean per sample, summed
    cost = None
    to_go = None
    if not pilot.unpriced:
        usd = _per_arm(pilot, lambda f: f.cost_usd)
        cost = scaled_arms(usd, docs, questions, every).total(runs)
        # per arm, the planned questions it has not run (a half-run question counts for the arm it lacks)
        left = {
            arm: float(max(0, questions - pilot.ran(arm)) if target.extends_pilot else questions)
            for arm in pilot.arms
        }
        to_go = scaled_arms(usd, docs, questions, left).total(epochs)
    overhead = _overhead(pilot)
    workers = max(1, min(target.concurrency, runs))
    wall = scaled_arms(_per_arm(pilot, lambda f: f.wall_s * overhead), docs, questions, every)
    bounds: dict[str, schema.Projected] = {"workers": wall.total(runs / workers)}
    if target.endpoint_concurrency:
        model = scaled_arms(_per_arm(pilot, lambda f: f.model_s), docs, questions, every)
        bounds["endpoint concurrency"] = model.total(runs / target.endpoint_concurrency)
    if target.rpm:
        calls = scaled_arms(_per_arm(pilot, lambda f: f.calls), docs, questions, every)
        bounds["rpm"] = calls.total(runs * 60.0 / target.rpm)
    if target.tpm:
        tokens = scaled_arms(_per_arm(pilot, lambda f: f.tokens), docs, questions, every)
        bounds["tpm"] = tokens.total(runs * 60.0 / target.tpm)
    limited_by = max(bounds, key=lambda k: bounds[k].value or 0.0)
    chosen = bounds[limited_by]

    def plus_startup(value: float | None) -> float | None:
        return None if value is None else value + pilot.startup_s

    elapsed = schema.Projected(
        value=plus_startup(chosen.value),
        low=plus_startup(max((b.low for b in bounds.values() if b.low is not None), default=None)),
        high=plus_startup(max((b.high for b in bounds.values() if b.high is not None), default=None)),
    )
    size = schema.PlanSize(
        questions=questions,
        documents=documents,
        samples=runs * len(pilot.arms),
        cost=cost,
        cost_to_go=to_go,
        wall_s=elapsed,
        mde=mde_at(plan, questions, documents, size_cv),
    )
    return size, limited_by


def project(
    pilot: Pilot,
    target: Target,
    *,
    target_mde: float | None = None,
    defaults: stats.PlanningAssumptions | None = None,
) -> schema.Plan:
    """The pilot projected to ``target`` (and, with ``target_mde``, to the smallest run that detects
    it, with documents of the target's questions per document)."""
    if not pilot.questions:
        raise ValueError("the pilot has no questions")
    plan, discordance_source, icc_source, notes = assumptions(pilot, defaults)
    size_cv = _size_cv(target.document_sizes)
    full, limited_by = project_size(pilot, target, target.questions, target.documents, plan, size_cv)
    for_target = None
    if target_mde is not None:
        per_document = target.questions / max(1, target.documents)
        needed = questions_for(plan, target_mde, per_document, size_cv)
        documents = max(2, math.ceil(needed / per_document))
        for_target, _ = project_size(pilot, target, needed, documents, plan, size_cv)
        if needed > target.questions:
            notes.append(
                f"a {target_mde * 100:g}-point MDE needs {needed:,} questions, more than the "
                f"{target.questions:,} planned: at {per_document:.1f} questions per document, about "
                f"{documents:,} documents"
            )
    if pilot.partial:
        missing = ", ".join(
            f"{arm}: {len(pilot.questions) - pilot.ran(arm)} missing"
            for arm in pilot.arms
            if pilot.ran(arm) < len(pilot.questions)
        )
        notes.append(
            f"{pilot.partial} of the pilot's {len(pilot.questions)} questions ran in only some arms "
            f"({missing}): each arm's cost and time per sample come from its own samples, and the "
            "samples missing count as still to run"
        )
    pilot_cost = None
    if not pilot.unpriced:
        pilot_cost = sum(q.cost_usd for q in pilot.questions) * pilot.epochs
    if pilot.unpriced:
        notes.append(f"no price known for {', '.join(pilot.unpriced)}: no cost figure")
    overhead = _overhead(pilot)
    if pilot.busy_s is None:
        notes.append(
            "no finished session of the pilot: the wall time counts the samples' own time only "
            "(no set-up, no waits), so it is a lower estimate"
        )
    return schema.Plan(
        pilot_questions=len(pilot.questions),
        pilot_documents=pilot.documents,
        pilot_samples=pilot.samples,
        pilot_cost=pilot_cost,
        pilot_wall_s=None if pilot.busy_s is None else pilot.busy_s + pilot.startup_s,
        arms=list(pilot.arms),
        compared=list(pilot.compared or ()),
        epochs=target.epochs,
        concurrency=target.concurrency,
        time_limited_by=limited_by,
        overhead=overhead,
        startup_s=pilot.startup_s,
        discordance=plan.discordance,
        discordance_source=discordance_source,
        icc=plan.icc,
        icc_source=icc_source,
        alpha=plan.alpha,
        power=plan.power,
        full=full,
        target_mde=target_mde,
        for_target=for_target,
        unpriced=list(pilot.unpriced),
        notes=notes,
    )


def pilot_from_run(
    manifest: Manifest,
    records: Sequence[RunRecord],
    outcomes: Mapping[str, Mapping[str, QuestionOutcome]],
    arms: Sequence[str],
    *,
    concurrency: int | None = None,
) -> Pilot:
    """A loaded run as a pilot: ``arms`` in the report's order (the first two are compared),
    ``concurrency`` its workers (default: its last session's, else its config's, else 4)."""
    from docab.log.costs import record_cost

    compared = (arms[0], arms[1]) if len(arms) >= 2 else None
    sessions = [s.concurrency for s in manifest.sessions if s.concurrency]
    configured = manifest.config.get("concurrency")
    workers = concurrency or (sessions[-1] if sessions else None)
    if workers is None:
        workers = configured if isinstance(configured, int) and configured > 0 else 4
    busy, startup = pilot_timing(manifest, records)
    unpriced = sorted({m for r in records for m in record_cost(r).unpriced})
    return Pilot(
        questions=pilot_questions({a: outcomes[a] for a in arms if a in outcomes}, compared),
        arms=tuple(arms),
        compared=compared,
        epochs=max((o.epochs for by_q in outcomes.values() for o in by_q.values()), default=1),
        concurrency=workers,
        busy_s=busy,
        startup_s=startup,
        unpriced=tuple(unpriced),
    )


def document_sizes(doc_ids: Sequence[str]) -> tuple[int, ...]:
    """Questions per document, from the planned questions' document ids."""
    counts: dict[str, int] = {}
    for doc_id in doc_ids:
        counts[doc_id] = counts.get(doc_id, 0) + 1
    return tuple(counts.values())
