"""``docab convert`` in shards: each shard converts a disjoint, deterministic subset of the PDFs;
shards share one output folder (each writes its own manifest) or are copied together, and the
result is the corpus one unsharded conversion makes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docab_benchmark.mmlongbench.corpus import ConversionError, convert_corpus, corpus_index
from docab_benchmark.mmlongbench.corpus.runner import MANIFEST, find_pdfs, read_manifest
from docab_benchmark.shards import shard_of
from tests.benchmark.test_corpus_convert import tree

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pdfs(suite_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite's 3 PDFs and 3 copies under other names (the copies fall in shard 1 of 2, the
    originals in shard 2)."""
    folder = tmp_path_factory.mktemp("pdfs")
    for pdf in find_pdfs(suite_dir / "documents"):
        shutil.copyfile(pdf, folder / pdf.name)
        shutil.copyfile(pdf, folder / f"copy of {pdf.name}")
    return folder


def documents(folder: Path) -> dict[str, str]:
    """The corpus files but the manifests (which differ in name between a sharded and a whole run)."""
    return {name: digest for name, digest in tree(folder).items() if not name.startswith("manifest")}


def test_shards_sharing_a_folder_make_the_corpus_of_one_conversion(
    pdfs: Path, suite_corpus: Path, tmp_path: Path
) -> None:
    whole = tmp_path / "whole"
    convert_corpus(pdfs, whole, jobs=1)
    shared = tmp_path / "shared"
    parts = [convert_corpus(pdfs, shared, jobs=1, shard=(i, 2)) for i in (1, 2)]
    names = [{r.source for r in part.results} for part in parts]
    assert (
        all(names) and sum(map(len, names)) == 6 and set().union(*names) == {p.name for p in find_pdfs(pdfs)}
    )
    for i, part in enumerate(names, 1):
        assert all(shard_of(name, 2) == i for name in part)  # by file name, the rule docab run uses
    assert documents(shared) == documents(whole)  # byte for byte
    assert sorted(p.name for p in shared.glob("manifest*")) == [
        f"manifest.shard-{i}-of-2.json" for i in (1, 2)
    ]
    for i, part in enumerate(names, 1):  # each shard's manifest lists its own documents only
        listed = json.loads((shared / f"manifest.shard-{i}-of-2.json").read_text())["documents"]
        assert {entry["source"] for entry in listed.values()} == part
    assert corpus_index(shared) == {
        source: shared / path.name for source, path in corpus_index(whole).items()
    }
    assert read_manifest(shared) == read_manifest(whole)
    # Resuming a shard finds its documents current; an unsharded run over the folder does too.
    assert len(convert_corpus(pdfs, shared, jobs=1, shard=(2, 2)).skipped) == len(names[1])
    again = convert_corpus(pdfs, shared, jobs=1)
    assert len(again.skipped) == 6 and not again.converted
    assert set(json.loads((shared / MANIFEST).read_text())["documents"]) == set(read_manifest(whole))


def test_shards_in_folders_of_their_own_are_copied_together(pdfs: Path, tmp_path: Path) -> None:
    merged = tmp_path / "merged"
    merged.mkdir()
    for i in (1, 2):
        own = tmp_path / f"part-{i}"
        convert_corpus(pdfs, own, jobs=1, shard=(i, 2))
        shutil.copytree(own, merged, dirs_exist_ok=True)  # no file name of one shard is in the other
    assert len(corpus_index(merged)) == 6
    assert len(convert_corpus(pdfs, merged, jobs=1).skipped) == 6


def test_a_stale_manifest_entry_loses_to_the_document_on_disk(pdfs: Path, tmp_path: Path) -> None:
    from docab_benchmark.mmlongbench.corpus import RenderSettings, get_converter

    out = tmp_path / "out"
    convert_corpus(pdfs, out, jobs=1, shard=(1, 1))  # recorded in manifest.shard-1-of-1.json
    low = get_converter("pypdfium2", RenderSettings(dpi=72.0))
    convert_corpus(pdfs, out, jobs=1, converter=low)  # replaces every folder; manifest.json says so
    entries = read_manifest(out)
    assert {entry["settings"]["dpi"] for entry in entries.values()} == {72.0}  # what meta.json holds
    # The shard's old entry still says 144 dpi, but its folders now hold the 72 dpi conversion:
    redo = convert_corpus(pdfs, out, jobs=1, shard=(1, 1))
    assert len(redo.converted) == 6 and not redo.skipped


def test_a_bad_shard_is_refused(pdfs: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"1 <= i <= N, got \(0, 3\)"):
        convert_corpus(pdfs, tmp_path / "out", jobs=1, shard=(0, 3))


def test_convert_shard_auto_reads_the_scheduler(pdfs: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SLURM_ARRAY_TASK_ID": "1",
        "SLURM_ARRAY_TASK_MIN": "0",
        "SLURM_ARRAY_TASK_MAX": "1",
        "SLURM_ARRAY_TASK_COUNT": "2",
    }
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "docab",
            "convert",
            str(pdfs),
            "--out",
            str(out),
            "--jobs",
            "1",
            "--shard",
            "auto",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "docab convert: shard 2 of 2 (Slurm array task 1 of 0-1)" in done.stderr
    expected = {p.name for p in find_pdfs(pdfs) if shard_of(p.name, 2) == 2}
    assert (
        len(expected) == 3
        and set(corpus_index(out)) == expected
        and f"-> {out} (shard 2 of 2)" in done.stdout
    )
    refused = subprocess.run(
        [sys.executable, "-m", "docab", "convert", str(pdfs), "--out", str(out), "--shard", "auto"],
        env={k: v for k, v in env.items() if not k.startswith("SLURM_ARRAY_TASK_M")},
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--shard auto: SLURM_ARRAY_TASK_ID is set without the array's range" in refused.stderr
