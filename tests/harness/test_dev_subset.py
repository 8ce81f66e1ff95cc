"""The demo arms with ``baseline/keyword`` over the real MMLongBench-Doc dev subset (issue 13, "Done when").

No sample may hit a limit through repetition in either arm, and the two arms must be shown the
same lines of every document. The old policy failed here: 3 of 117 samples of the md-vision arm
repeated ``read_file offset=1`` until the turn limit. Converting the 14 PDFs takes about half a
minute, so the test is marked slow (``uv run pytest -m slow tests/harness/test_dev_subset.py``);
it skips, saying why, when ``../shared/data`` or the md-vision server is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from docab.log.store import read_records
from tests.conftest import shared_data

CONFIGS = Path(__file__).resolve().parents[2] / "harness" / "docab" / "configs"


@pytest.mark.slow
def test_the_demo_arms_never_repeat_a_call_over_the_dev_subset(tmp_path: Path) -> None:
    import docab
    from docab_benchmark.mmlongbench.corpus import convert_corpus

    data = shared_data("mmlongbench-dev")
    if shutil.which("md-vision") is None:
        pytest.skip("the md-vision server (tools/md_vision) is not installed in this checkout")
    corpus = tmp_path / "corpus"
    report = convert_corpus(data / "documents", corpus, jobs=2)
    assert not report.failed, report.failed
    demo = (CONFIGS / "demo.toml").read_text(encoding="utf-8")
    dataset = f'[dataset]\nsource = "mmlongbench"\npath = "{data}"\ncorpus = "{corpus}"\n'
    assert '[dataset]\nsource = "suite"\n' in demo
    config = tmp_path / "dev-keyword.toml"
    config.write_text(demo.replace('[dataset]\nsource = "suite"\n', dataset), encoding="utf-8")

    outcome = docab.run(
        config, results_dir=tmp_path / "results", concurrency=2, quiet=True, say=lambda _: None
    )
    records = list(read_records(outcome.run_dir / "records.jsonl"))
    assert len(records) == 2 * 117 and {r.arm for r in records} == {"fs", "fs+md-vision"}
    by_question: dict[str, dict[str, object]] = {}
    for record in records:
        calls = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in record.tool_calls]
        assert len(calls) == len(set(calls)), (record.arm, record.qid, calls)
        assert record.status == "ok" and record.limit_hit is None and record.turns <= 4, (
            record.arm,
            record.qid,
        )
        by_question.setdefault(record.qid, {})[record.arm] = record
    for arms in by_question.values():
        fs, md = arms["fs"], arms["fs+md-vision"]
        assert fs.page_shares == md.page_shares and fs.extracted_answer == md.extracted_answer  # type: ignore[attr-defined]
