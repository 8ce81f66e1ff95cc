"""Which questions a run asks, and where it finds them: ``--limit`` spreads over documents,
``--first`` does not; a config's relative paths are its own folder's; "not found" shows the
absolute path it tried."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from docab.cli.main import build_parser, main
from docab.config import CONFIG_DIR, ConfigError, load_config
from docab.errors import DatasetError, RunError
from docab.runner.dataset import load_dataset
from docab.runner.launch import RunRequest, select_samples
from docab.runner.schedule import spread_over_documents
from tests.harness.corpus import make_dataset, write_benchmark_folder


@pytest.fixture
def samples(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_dataset(tmp_path / "corpus", documents=5).samples  # 5 documents x 4 questions


def test_limit_spreads_over_documents_round_robin(samples) -> None:  # type: ignore[no-untyped-def]
    five = spread_over_documents(samples, 5, seed=0)
    assert len(five) == 5 and len({s.doc_id for s in five}) == 5  # one per document, not one document
    eight = spread_over_documents(samples, 8, seed=0)
    assert max(Counter(s.doc_id for s in eight).values()) == 2  # a second round before a third
    assert {s.qid for s in five} <= {s.qid for s in eight}  # raising the limit extends the run
    assert [s.qid for s in eight] == [s.qid for s in samples if s in eight]  # in dataset order
    assert spread_over_documents(samples, 5, seed=0) == five  # seeded
    other_seeds = {tuple(s.qid for s in spread_over_documents(samples, 5, seed=k)) for k in range(1, 6)}
    assert len(other_seeds) > 1
    assert spread_over_documents(samples, 99, seed=0) == list(samples)


def test_first_keeps_the_old_behaviour_and_excludes_limit(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "corpus", documents=3)
    first = select_samples(dataset, limit=None, first=3, shard=None)
    assert [s.qid for s in first] == [s.qid for s in dataset.samples[:3]]
    assert {s.doc_id for s in first} == {"company-0.pdf"}
    spread = select_samples(dataset, limit=3, shard=None, seed=0)
    assert len({s.doc_id for s in spread}) == 3
    with pytest.raises(RunError, match="give limit or first, not both"):
        RunRequest(load_config("demo"), limit=2, first=2)


def test_help_teaches_limit_and_first(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--limit N run N questions spread over the documents: round-robin" in text
    assert "--first N run the first N questions in dataset order" in text
    assert main(["run", "demo", "--limit", "2", "--first", "2"]) == 2
    assert "--limit and --first exclude each other" in capsys.readouterr().err


# -- config-relative paths ------------------------------------------------------------------------------

CONFIG = """\
name = "rel"
[dataset]
source = "mmlongbench"
path = "{path}"
corpus = "{corpus}"
[model]
name = "baseline/keyword"
[[arms]]
name = "fs"
"""


def write_config(folder: Path, path: str, corpus: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "rel.toml"
    config.write_text(CONFIG.format(path=path, corpus=corpus))
    return config


def test_relative_paths_resolve_against_the_configs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_benchmark_folder(tmp_path / "project" / "bench", documents=1)
    config = load_config(write_config(tmp_path / "project" / "configs", "../bench/data", "../bench/corpus"))
    monkeypatch.chdir(tmp_path)  # anywhere else
    dataset = load_dataset(config.dataset, results_dir=Path("results"), base_dir=config.base_dir)
    assert len(dataset.samples) == 4 and dataset.corpus == tmp_path / "project" / "bench" / "corpus"
    assert config.resolve_path("~/x") == Path.home() / "x"


def test_shipped_configs_are_templates_for_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for config in (load_config("mmlongbench-openai"), load_config(CONFIG_DIR / "mmlongbench-openai.toml")):
        assert config.base_dir is None
        assert config.resolve_path("results/corpus/x") == tmp_path / "results" / "corpus" / "x"


def test_not_found_messages_show_the_absolute_path_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=re.escape(f"looked for {tmp_path / 'nope.toml'}")):
        load_config("nope.toml")
    missing_data = load_config(write_config(tmp_path / "a", "data", "corpus"))
    with pytest.raises(
        DatasetError, match=re.escape(f"dataset.path 'data' not found (looked for {tmp_path / 'a' / 'data'})")
    ):
        load_dataset(missing_data.dataset, results_dir=tmp_path, base_dir=missing_data.base_dir)
    write_benchmark_folder(tmp_path / "b", documents=1)
    missing_corpus = load_config(write_config(tmp_path / "b", "data", "converted"))
    with pytest.raises(
        DatasetError, match=re.escape(f"the converted corpus {tmp_path / 'b' / 'converted'} does not exist")
    ):
        load_dataset(missing_corpus.dataset, results_dir=tmp_path, base_dir=missing_corpus.base_dir)
