"""Resuming after the data changed (F6): a pilot's samples scored against one set of gold answers and
documents, the rest against another, is refused, unless accepted.

The manifest records digests of what each question the run has asked holds (text, gold answer,
answer format, evidence) and of each converted document it has read
(``docab.runner.dataset.dataset_contents``); resuming compares them (``RunStore.check``). Questions
the earlier sessions never asked are no change, and a manifest an older docab wrote (no contents)
still resumes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.identity import compare_contents
from docab.log.manifest import DataContents, DatasetInfo, Manifest, ModelsInfo
from docab.log.store import RunStore, StoreError, manifest_for, resume_notes, session_info
from docab.runner.dataset import Dataset, Sample, dataset_contents
from tests.harness.corpus import make_dataset, write_benchmark_folder


def manifest(samples: tuple[Sample, ...] | list[Sample], version: str = "1") -> Manifest:
    return manifest_for(
        run_id="r",
        config={"name": "r"},
        config_hash="abc",
        dataset=DatasetInfo(source="mmlongbench", name="test", version=version),
        models=ModelsInfo(agent="baseline/keyword", is_baseline=True),
        shard=None,
        contents=dataset_contents(samples),
    )


def corrected(dataset: Dataset, qids: set[str]) -> tuple[Sample, ...]:
    """The samples with the gold answer of ``qids`` changed (a corrected data defect)."""
    return tuple(replace(s, answer=s.answer + "0") if s.qid in qids else s for s in dataset.samples)


def test_a_resume_whose_gold_answers_or_documents_changed_is_refused_unless_accepted(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=2)
    pilot = dataset.samples[:2] + dataset.samples[4:6]  # two questions of each document
    store = RunStore(tmp_path / "run")
    store.begin(manifest(pilot), session=session_info(["pilot"]))

    # Two of the pilot's gold answers corrected, the first document converted again.
    samples = corrected(dataset, {pilot[0].qid, pilot[2].qid})
    document = samples[0].document_dir / "document.md"
    document.write_text(document.read_text().replace("Employees: ", "Staff count: "))
    full = manifest(samples, version="2")
    with pytest.raises(StoreError) as refused:
        store.check(full)
    message = str(refused.value)
    assert "\n" not in message
    assert "2 questions' gold answers and 1 converted document differ from what the run's earlier" in message
    assert "company-0.pdf" in message and "--out" in message and "--accept-data-change" in message
    with pytest.raises(StoreError, match="gold answers"):
        store.begin(full, session=session_info(["full"]))
    assert len(RunStore(tmp_path / "run").read_manifest().sessions) == 1  # type: ignore[union-attr]

    # Accepted: the run goes on, the manifest holds the new data and the session says what changed.
    existing = store.check(full, accept_data_change=True)
    assert existing is not None
    notes = resume_notes(existing, full, session_info(["full"]))
    assert any(note.startswith("2 questions' gold answers and 1 converted document differ") for note in notes)
    begun = store.begin(full, session=session_info(["full"]), accept_data_change=True)
    assert begun.dataset.version == "2" and begun.contents == full.contents
    assert begun.sessions[-1].data_change is not None and "gold answers" in begun.sessions[-1].data_change
    assert store.check(full) is not None  # the next resume compares with the accepted data


def test_questions_never_asked_before_are_no_change_and_are_added(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=2)
    store = RunStore(tmp_path / "run")
    store.begin(manifest(dataset.samples[:3]), session=session_info(["pilot", "--limit", "3"]))
    # A larger limit, and a question the pilot never asked whose gold answer differs from nothing.
    later = corrected(dataset, {dataset.samples[5].qid})
    begun = store.begin(manifest(later), session=session_info(["full"]))
    assert begun.contents is not None and set(begun.contents.questions) == {s.qid for s in later}
    assert set(begun.contents.documents) == {"company-0.pdf", "company-1.pdf"}
    # A smaller limit afterwards is no change either.
    assert store.check(manifest(later[:1])) is not None


def test_a_manifest_without_contents_still_resumes_and_records_them_from_then_on(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    store = RunStore(tmp_path / "run")
    old = manifest(dataset.samples).model_copy(update={"contents": None})  # as an older docab wrote it
    store.begin(old, session=session_info(["old"]))
    raw = json.loads((tmp_path / "run" / "manifest.json").read_text())
    raw.pop("contents")
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(raw))

    changed = manifest(corrected(dataset, {dataset.samples[0].qid}))
    existing = store.check(changed)
    assert existing is not None and existing.contents is None
    assert resume_notes(existing, changed, session_info(["new"])) == []
    begun = store.begin(changed, session=session_info(["new"]))
    assert begun.contents == changed.contents
    with pytest.raises(StoreError, match="1 question's gold answer differs"):
        store.check(manifest(dataset.samples))


def test_a_document_converted_only_now_is_no_change(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    missing = tuple(replace(s, document_dir=tmp_path / "not-converted") for s in dataset.samples)
    assert dataset_contents(missing).documents == {}
    assert not compare_contents(dataset_contents(missing), dataset_contents(dataset.samples))
    assert not compare_contents(DataContents(), dataset_contents(dataset.samples))


def test_a_note_says_which_versions_differ_from_the_first_session(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=1)
    first = session_info(["first"])
    first = first.model_copy(update={"packages": {**first.packages, "md-vision": "0.0.1-old"}})
    existing = manifest(dataset.samples).with_session(first).with_session(session_info(["second"]))
    now = session_info(["third"])
    notes = resume_notes(existing, manifest(dataset.samples), now)
    assert len(notes) == 1 and "\n" not in notes[0]
    assert f"md-vision 0.0.1-old → {now.packages['md-vision'] or 'absent'}" in notes[0]
    assert notes[0].startswith("versions changed since the run's first session: ")
    assert resume_notes(existing.model_copy(update={"sessions": (now,)}), existing, now) == []


CONFIG = """\
name = "pilot"
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "baseline/keyword"
[[arms]]
name = "fs"
"""


def test_docab_run_refuses_to_extend_a_pilot_whose_data_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, corpus = write_benchmark_folder(tmp_path / "bench", documents=2)
    config = tmp_path / "pilot.toml"
    config.write_text(CONFIG)
    run = ["run", str(config), "--out", str(tmp_path / "res"), "--quiet"]
    assert main([*run, "--limit", "4"]) == 0
    rows = json.loads((data / "samples.json").read_text())
    for row in rows:
        row["answer"] = row["answer"] + "0" if row["answer"].isdigit() else row["answer"]
    (data / "samples.json").write_text(json.dumps(rows))
    for document in corpus.glob("*/document.md"):
        document.write_text(document.read_text().replace("Employees: ", "Staff count: "))
    capsys.readouterr()
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "question's gold answer and 2 converted documents differ from what the run's earlier" in err
    assert err.count("\n") == 1 and "--out" in err and "--accept-data-change" in err
    assert main([*run, "--accept-data-change"]) == 0
    out = capsys.readouterr().out
    assert "accepted: the samples already recorded keep their scores" in out
