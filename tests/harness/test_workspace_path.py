"""One neutral workspace path (issue 13, finding 10): nothing in it names the run, an arm or a question.

The workspace folder used to be ``docab-<run id>-...``, and md-vision showed it to the model; now
its name is neutral and the tools show paths relative to it (tests/harness/test_demo.py checks
what the model of a whole demo run was shown).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from docab.config import parse_config
from docab.log.store import RunStore
from docab.messages import Message, Turn
from docab.runner.context import RunContext
from docab.runner.progress import ProgressState, SilentProgress
from docab.runner.schedule import WorkUnit
from docab.runner.workers import run_units
from tests.harness.corpus import exact_scorer, make_dataset
from tests.harness.fakes import ScriptedModel, submit


def test_workspace_paths_name_no_run_arm_or_question(tmp_path: Path) -> None:
    parent = tmp_path / "tmp"
    parent.mkdir()
    seen: list[str] = []

    def look(messages: Sequence[Message]) -> Turn:
        # Every folder under the temporary folder while the sample runs: what a tool could name.
        for folder, dirs, _ in os.walk(parent):
            seen.extend(str(Path(folder) / d) for d in dirs)
        return submit("x")

    config = parse_config(
        {
            "name": "run-name-secret",
            "model": "baseline/keyword",
            "arms": [{"name": "arm-alpha-secret"}, {"name": "arm-beta-secret"}],
        }
    )
    ctx = RunContext(
        run_id="run-id-secret",
        config=config,
        model=ScriptedModel(then=look),
        scorer=exact_scorer,
        store=RunStore(tmp_path / "run"),
        progress=SilentProgress(),
        workspace_parent=parent,
    )
    dataset = make_dataset(tmp_path / "corpus", documents=2)
    units = [WorkUnit(s, 0, ("arm-alpha-secret", "arm-beta-secret")) for s in dataset.samples]
    ctx.progress.start(ProgressState.for_run({"arm-alpha-secret": 8, "arm-beta-secret": 8}))
    asyncio.run(run_units(ctx, units, concurrency=2))
    assert seen and not os.listdir(parent)  # looked while running; removed afterwards
    roots = {
        Path(p).relative_to(parent).parts[:2] for p in seen if len(Path(p).relative_to(parent).parts) >= 2
    }
    assert {root[1] for root in roots} == {"pool", "w000", "w001"}
    secrets = ("secret", *(s.qid for s in dataset.samples), *(s.doc_id for s in dataset.samples))
    for path in seen:
        assert not any(secret in path for secret in secrets), path
    assert all(Path(p).relative_to(parent).parts[0].startswith("docab-") for p in seen)
