"""``docab.report.plan``: a pilot projected to a full run (pure functions on plain data)."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from docab.report import stats
from docab.report.plan import (
    MIN_DOCUMENTS_FOR_DISCORDANCE,
    ArmFigures,
    Pilot,
    PilotQuestion,
    Target,
    project,
    questions_for,
    scaled_mean,
)


def pilot(
    n: int = 40,
    *,
    per_document: int = 1,
    cost: float = 0.05,
    seconds: float = 10.0,
    differences: list[float] | None = None,
    busy_s: float | None = None,
    concurrency: int = 4,
    seed: int = 1,
) -> Pilot:
    rng = random.Random(seed)
    gaps = differences or [rng.choice([-1.0, 0.0, 0.0, 1.0]) for _ in range(n)]
    questions = tuple(
        PilotQuestion(
            qid=f"q{i}",
            doc_id=f"d{i // per_document}",
            by_arm=halves(cost * (0.5 + rng.random()), seconds * (0.5 + rng.random()), seconds / 2),
            difference=gaps[i],
        )
        for i in range(n)
    )
    return Pilot(questions, ("fs", "fs+md"), ("fs", "fs+md"), concurrency=concurrency, busy_s=busy_s)


def halves(cost: float, wall_s: float, model_s: float) -> tuple[ArmFigures, ArmFigures]:
    """A question's figures (4 model calls, 20,000 tokens) split evenly between the two arms."""
    half = ArmFigures("fs", cost / 2, wall_s / 2, model_s / 2, calls=2.0, tokens=10_000.0)
    return half, ArmFigures("fs+md", half.cost_usd, half.wall_s, half.model_s, half.calls, half.tokens)


def test_the_cost_interval_holds_the_pilot_mean_scaled_and_narrows_to_nothing_at_the_full_set() -> None:
    p = pilot()
    mean = sum(q.cost_usd for q in p.questions) / 40
    plan = project(p, Target(questions=1000, documents=125))
    assert plan.full.cost is not None and plan.full.cost.low is not None and plan.full.cost.high is not None
    assert plan.full.cost.value is not None
    assert plan.full.cost.value == pytest.approx(mean * 1000)
    assert plan.full.cost.low < plan.full.cost.value < plan.full.cost.high
    assert plan.full.cost_to_go is not None and plan.full.cost_to_go.value == pytest.approx(mean * 960)
    # the pilot is the whole set: nothing left to estimate
    whole = project(p, Target(questions=40, documents=40))
    assert whole.full.cost is not None
    assert whole.full.cost.low == pytest.approx(whole.full.cost.value)
    assert whole.full.cost.high == pytest.approx(whole.full.cost.value)
    assert whole.full.cost_to_go is not None and whole.full.cost_to_go.value == 0


def test_the_cost_interval_covers_the_realised_total_of_the_population() -> None:
    """Draw pilots of 40 from a skewed population of 1,000 questions on 125 documents: the interval
    holds the population's total about 95 % of the time."""
    rng = random.Random(7)
    docs = [f"d{i // 8}" for i in range(1000)]
    base = {d: rng.lognormvariate(0, 0.5) for d in sorted(set(docs))}  # sorted: set order varies by hash seed
    costs = [base[d] * rng.lognormvariate(0, 0.7) for d in docs]
    total = sum(costs)
    held = 0
    trials = 400
    for _ in range(trials):
        chosen = rng.sample(range(1000), 40)
        s = scaled_mean([costs[i] for i in chosen], [docs[i] for i in chosen], 1000).total(1000)
        assert s.low is not None and s.high is not None
        held += s.low <= total <= s.high
    assert 0.88 <= held / trials <= 0.99


def test_wall_time_scales_with_workers_and_counts_the_measured_overhead() -> None:
    p = pilot(busy_s=None)
    own = sum(q.wall_s for q in p.questions) / 40
    four = project(p, Target(questions=400, documents=50, concurrency=4))
    eight = project(p, Target(questions=400, documents=50, concurrency=8))
    assert four.full.wall_s.value == pytest.approx(own * 400 / 4)
    assert eight.full.wall_s.value == pytest.approx(own * 400 / 8)
    assert four.time_limited_by == "workers"
    assert any("lower estimate" in note for note in four.notes)
    # the pilot took twice its samples' time per worker: set-up and waits count too
    slow = pilot(busy_s=sum(q.wall_s for q in p.questions) / 4 * 2)
    assert project(slow, Target(questions=400, documents=50)).overhead == pytest.approx(2.0)


def test_a_rate_limit_bounds_the_wall_time_and_is_named() -> None:
    p = pilot()
    # 400 questions x 4 calls at 10 requests a minute: 160 minutes, far above the workers' time
    plan = project(p, Target(questions=400, documents=50, rpm=10))
    assert plan.time_limited_by == "rpm"
    assert plan.full.wall_s.value == pytest.approx(400 * 4 * 6.0)
    tokens = project(p, Target(questions=400, documents=50, tpm=100_000))
    assert tokens.time_limited_by == "tpm"
    assert tokens.full.wall_s.value == pytest.approx(400 * 20_000 / 100_000 * 60)


def test_the_mde_uses_the_pilots_discordance_with_enough_documents_and_the_defaults_otherwise() -> None:
    gaps = [1.0, -1.0, 0.0, 0.0, 0.0] * 8  # 40 % of answers differ
    plan = project(pilot(differences=gaps), Target(questions=1000, documents=125))
    assert plan.discordance_source == "pilot" and plan.discordance == pytest.approx(0.4)
    assert plan.icc_source == "default"  # one question per document: no ICC
    expected = stats.PlanningAssumptions(discordance=0.4).mde(1000, 8.0, documents=125)
    assert plan.full.mde == pytest.approx(expected)
    few = pilot(n=MIN_DOCUMENTS_FOR_DISCORDANCE - 1, differences=gaps)
    fallback = project(few, Target(questions=1000, documents=125))
    assert fallback.discordance_source == "default" and fallback.discordance == 0.3
    assert any("default discordance" in note for note in fallback.notes)


def test_identical_arms_plan_with_the_rule_of_three_bound_not_zero() -> None:
    plan = project(pilot(differences=[0.0] * 40), Target(questions=1000, documents=125))
    assert plan.discordance_source == "pilot bound"
    assert plan.discordance == pytest.approx(3 / 40)
    assert plan.full.mde is not None and plan.full.mde > 0


def test_the_icc_comes_from_the_pilot_when_documents_repeat() -> None:
    rng = random.Random(3)
    gaps = []
    for _ in range(15):  # 15 documents of 4 questions, differences shared within a document
        shared = rng.choice([-1.0, 0.0, 1.0])
        gaps += [shared if rng.random() < 0.7 else rng.choice([-1.0, 0.0, 1.0]) for _ in range(4)]
    plan = project(pilot(n=60, per_document=4, differences=gaps), Target(questions=600, documents=75))
    assert plan.icc_source == "pilot"
    assert plan.icc > 0.1


def test_the_reverse_finds_the_fewest_questions_for_a_target_mde() -> None:
    assumptions = stats.PlanningAssumptions(discordance=0.3, icc=0.1)
    needed = questions_for(assumptions, 0.03, 8.0, 0.0)

    def mde(n: int) -> float:
        documents = math.ceil(n / 8)
        return assumptions.mde(n, n / documents, documents=documents)

    assert mde(needed) <= 0.03 < mde(needed - 1)
    plan = project(pilot(), Target(questions=1000, documents=125), target_mde=0.03)
    assert plan.for_target is not None and plan.for_target.mde is not None
    assert plan.for_target.mde <= 0.03
    assert plan.for_target.cost is not None and plan.full.cost is not None
    assert plan.full.cost.value is not None
    ratio = plan.for_target.questions / 1000
    assert plan.for_target.cost.value == pytest.approx(plan.full.cost.value * ratio)
    if plan.for_target.questions > 1000:
        assert any("more than the" in note for note in plan.notes)


def test_an_unpriced_model_gives_no_cost_and_says_so() -> None:
    p = pilot()
    unpriced = Pilot(
        tuple(
            dataclasses.replace(q, by_arm=tuple(dataclasses.replace(f, cost_usd=math.nan) for f in q.by_arm))
            for q in p.questions
        ),
        p.arms,
        p.compared,
        unpriced=("openai/mystery",),
    )
    plan = project(unpriced, Target(questions=100, documents=20))
    assert plan.full.cost is None and plan.pilot_cost is None
    assert any("openai/mystery" in note for note in plan.notes)


def test_one_arm_plans_with_the_defaults() -> None:
    p = pilot()
    single = Pilot(p.questions, ("fs",), None)
    plan = project(single, Target(questions=100, documents=20))
    assert plan.compared == [] and plan.discordance_source == "default"


def _record(arm: str, qid: str, doc: str, score: float, usd: float, cached: float, started: str):  # type: ignore[no-untyped-def]
    from docab.log.records import RunRecord
    from docab.pricing.cost import SampleCost

    return RunRecord(
        run_id="pilot",
        arm=arm,
        qid=qid,
        doc_id=doc,
        epoch=0,
        model="openai/stub",
        status="ok",
        score=score,
        answer_protocol="submit_tool",
        raw_answer="x",
        extracted_answer="x",
        gold="x",
        answer_format="Str",
        wall_time_s=2.0,
        model_time_s=1.0,
        turns=3,
        started_at=started,
        cost=SampleCost(by_role={"agent": usd}, cached_usd=cached),
    )


def test_a_loaded_run_becomes_a_pilot_with_uncached_costs_and_its_sessions_time() -> None:
    from docab.log.manifest import Manifest, Session
    from docab.report.outcomes import question_outcomes
    from docab.report.plan import pilot_from_run

    records = [
        _record("fs", "q1", "d1", 1.0, 0.10, 0.0, "2026-01-01T00:00:10+00:00"),
        _record("fs+md", "q1", "d1", 0.0, 0.0, 0.20, "2026-01-01T00:00:12+00:00"),  # a cache hit
        _record("fs", "q2", "d2", 0.0, 0.10, 0.0, "2026-01-01T00:00:14+00:00"),
        _record("fs+md", "q2", "d2", 1.0, 0.20, 0.0, "2026-01-01T00:00:16+00:00"),
    ]
    manifest = Manifest(
        sessions=(
            Session(
                started_at="2026-01-01T00:00:00+00:00",
                finished_at="2026-01-01T00:00:30+00:00",
                concurrency=2,
            ),
            Session(started_at="2026-01-02T00:00:00+00:00"),  # killed: not counted
        )
    )
    pilot = pilot_from_run(manifest, records, question_outcomes(records), ["fs", "fs+md"])
    assert pilot.compared == ("fs", "fs+md") and pilot.concurrency == 2
    assert [q.cost_usd for q in pilot.questions] == pytest.approx([0.30, 0.30])
    assert [q.difference for q in pilot.questions] == [-1.0, 1.0]
    assert pilot.busy_s == pytest.approx(20.0) and pilot.startup_s == pytest.approx(10.0)
    assert pilot.samples == 4 and pilot.documents == 2
