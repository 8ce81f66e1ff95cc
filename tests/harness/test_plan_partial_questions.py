"""``docab plan`` on a pilot with questions run in only some arms (a pilot stopped by its spend cap,
a kill, a Ctrl-C or the breaker): each arm is projected from its own samples, and the samples it
has not run count as still to run.

Red-team pass 6, finding 7: a pilot of 3 samples at $3.30 each (one question in both arms, one in
one arm) planned the 16-question run at $79.20 with $69.30 still to run; the truth is $105.60 and
$95.70 (-25 %).
"""

from __future__ import annotations

import pytest

from docab.log.manifest import Manifest
from docab.log.records import RunRecord
from docab.pricing.cost import SampleCost
from docab.report.outcomes import question_outcomes
from docab.report.plan import Pilot, Target, pilot_from_run, project


def sample(arm: str, qid: str, doc: str, usd: float, seconds: float = 2.0) -> RunRecord:
    return RunRecord(
        run_id="pilot",
        arm=arm,
        qid=qid,
        doc_id=doc,
        epoch=0,
        model="openai/stub",
        status="ok",
        score=1.0,
        answer_protocol="submit_tool",
        raw_answer="x",
        extracted_answer="x",
        gold="x",
        answer_format="Str",
        wall_time_s=seconds,
        model_time_s=seconds / 2,
        turns=3,
        cost=SampleCost(by_role={"agent": usd}),
    )


def pilot_of(records: list[RunRecord]) -> Pilot:
    return pilot_from_run(Manifest(), records, question_outcomes(records), ["fs", "fs+md-vision"])


def test_a_half_run_question_counts_its_missing_arm_as_still_to_run() -> None:
    # the reproducer's pilot: q1 in both arms, q2 in fs only; every sample costs $3.30
    records = [
        sample("fs", "q1", "d1", 3.30),
        sample("fs+md-vision", "q1", "d1", 3.30),
        sample("fs", "q2", "d1", 3.30),
    ]
    plan = project(pilot_of(records), Target(questions=16, documents=4))
    assert plan.pilot_samples == 3 and plan.pilot_questions == 2
    assert plan.pilot_cost == pytest.approx(9.90)
    assert plan.full.samples == 32
    assert plan.full.cost is not None and plan.full.cost.value == pytest.approx(105.60)
    assert plan.full.cost_to_go is not None and plan.full.cost_to_go.value == pytest.approx(95.70)
    (note,) = [n for n in plan.notes if "only some arms" in n]
    assert note.startswith("1 of the pilot's 2 questions ran in only some arms (fs+md-vision: 1 missing)")


def test_each_arm_is_projected_from_its_own_samples() -> None:
    # fs costs $1 and takes 10 s a sample, fs+md-vision $3 and 30 s; fs ran 3 questions, fs+md-vision 1
    records = [sample("fs", f"q{i}", f"d{i}", 1.0, 10.0) for i in range(3)]
    records.append(sample("fs+md-vision", "q0", "d0", 3.0, 30.0))
    plan = project(pilot_of(records), Target(questions=10, documents=10, concurrency=1))
    assert plan.full.cost is not None and plan.full.cost.value == pytest.approx(10 * (1 + 3))
    assert plan.full.cost_to_go is not None and plan.full.cost_to_go.value == pytest.approx(7 * 1 + 9 * 3)
    assert plan.full.wall_s.value == pytest.approx(10 * (10 + 30))  # one worker, no measured overhead
    assert any("2 of the pilot's 3 questions ran in only some arms" in n for n in plan.notes)


def test_a_pilot_complete_in_every_arm_plans_as_before() -> None:
    records = [sample(arm, f"q{i}", f"d{i}", 1.0 + i) for i in range(4) for arm in ("fs", "fs+md-vision")]
    plan = project(pilot_of(records), Target(questions=40, documents=40))
    mean_question = sum(2 * (1.0 + i) for i in range(4)) / 4
    assert plan.full.cost is not None and plan.full.cost.value == pytest.approx(mean_question * 40)
    assert plan.full.cost_to_go is not None and plan.full.cost_to_go.value == pytest.approx(
        mean_question * 36
    )
    assert plan.pilot_samples == 8
    assert not any("only some arms" in n for n in plan.notes)
