"""Where question rows come from: a folder in the benchmark's GitHub layout, or Hugging Face ``datasets``.

Accepted sources (see ``read_source``):

- a local clone of the benchmark repository: ``ROOT/data/samples.json``, PDFs in ``ROOT/data/documents/``,
  the extraction prompt in ``ROOT/eval/prompt_for_answer_extraction.md``;
- any folder holding ``samples.json`` (PDFs in ``documents/`` beside it), such as the shared dev
  folder or the built-in suite, or the JSON file itself;
- the Hugging Face dataset through ``datasets``: ``hf:yubo2333/MMLongBench-Doc`` (needs the Hub), a
  ``.parquet``/``.arrow`` file, a folder of them (a snapshot of the dataset repository, whose
  ``documents/`` sits at its root), or a ``save_to_disk`` folder. The parquet carries no PDFs: they
  are looked for next to it, or given with ``documents_dir``.

This module only finds and reads rows; parsing them into typed records is ``questions``' job.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from docab_benchmark.mmlongbench.errors import DataError

Origin = Literal["github", "huggingface"]

SAMPLES_FILE = "samples.json"
DOCUMENTS_DIR = "documents"
PROMPT_FILE = "prompt_for_answer_extraction.md"
SUITE_MARKER = "suite.json"
HUB_PREFIX = "hf:"
HF_DATASET_ID = "yubo2333/MMLongBench-Doc"


@dataclass(frozen=True)
class RawSource:
    """Rows as read, with what was found around them."""

    rows: tuple[Mapping[str, Any], ...]
    origin: Origin
    location: str
    documents_dir: Path | None
    extraction_prompt: Path | None
    content_sha256: str
    marker: Mapping[str, Any] | None = None  # the built-in suite's suite.json, when present


def read_source(
    source: str | Path, *, documents_dir: str | Path | None = None, split: str = "train"
) -> RawSource:
    """Read the question rows of ``source`` (see the module docstring for what it may be)."""
    text = str(source)
    if text.startswith(HUB_PREFIX):
        return _read_hub(text[len(HUB_PREFIX) :], split=split, documents_dir=documents_dir)
    path = Path(text).expanduser()
    if not path.exists():
        raise DataError(
            f"question data not found at {path}: give a clone of the MMLongBench-Doc repository, a folder "
            f"holding {SAMPLES_FILE}, a parquet/arrow file, or hf:{HF_DATASET_ID}"
        )
    if path.is_file():
        if path.suffix.lower() == ".json":
            return _read_samples_json(path, documents_dir, split)
        if path.suffix.lower() in (".parquet", ".arrow"):
            return _read_table_file(path, split=split, documents_dir=documents_dir)
        raise DataError(f"{path} is neither a samples .json nor a .parquet/.arrow file")
    for candidate in (path / "data" / SAMPLES_FILE, path / SAMPLES_FILE):
        if candidate.is_file():
            return _read_samples_json(candidate, documents_dir, split)
    if (path / "state.json").is_file() or (path / "dataset_dict.json").is_file():
        return _read_saved_dataset(path, split=split, documents_dir=documents_dir)
    tables = sorted([*path.glob("*.parquet"), *path.glob("data/*.parquet")])
    if tables:
        return _read_parquet_files(tables, root=path, split=split, documents_dir=documents_dir)
    raise DataError(
        f"no questions found in {path}: expected data/{SAMPLES_FILE} (a clone of the benchmark), "
        f"{SAMPLES_FILE}, *.parquet or a datasets save_to_disk folder"
    )


# ------------------------------------------------------------------------------------ GitHub layout


def _read_samples_json(path: Path, documents_dir: str | Path | None, split: str) -> RawSource:
    if split != "train":  # a split the user asked for must not be silently ignored
        raise DataError(
            f"{path} is the GitHub release's samples.json, which has one split (train), not {split!r}; "
            "splits are for the Hugging Face release (parquet, arrow, a datasets folder or hf:)"
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        rows = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise DataError(f"{path} must hold a JSON list of question objects")
    folder = path.parent
    marker = _read_marker(folder / SUITE_MARKER)
    return RawSource(
        rows=tuple(rows),
        origin="github",
        location=str(path),
        documents_dir=_documents_dir(documents_dir, [folder / DOCUMENTS_DIR, folder.parent / DOCUMENTS_DIR]),
        extraction_prompt=_first_file(
            [folder / PROMPT_FILE, folder.parent / "eval" / PROMPT_FILE, folder / "eval" / PROMPT_FILE]
        ),
        content_sha256=hashlib.sha256(raw).hexdigest(),
        marker=marker,
    )


def _read_marker(path: Path) -> Mapping[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ------------------------------------------------------------------------------------ Hugging Face


def _rows_sha256(rows: Sequence[Mapping[str, Any]]) -> str:
    canonical = json.dumps(list(rows), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _hf_source(
    rows: list[dict[str, Any]], location: str, documents_dir: Path | None, prompt_dirs: list[Path]
) -> RawSource:
    return RawSource(
        rows=tuple(rows),
        origin="huggingface",
        location=location,
        documents_dir=documents_dir,
        extraction_prompt=_first_file([d / PROMPT_FILE for d in prompt_dirs]),
        content_sha256=_rows_sha256(rows),
    )


def _pick_split(dataset: Any, split: str, where: str) -> Any:
    # load_from_disk returns a DatasetDict for a saved dict, a Dataset for a saved split.
    if hasattr(dataset, "keys") and not hasattr(dataset, "features"):
        if split not in dataset:
            raise DataError(f"{where} has no split {split!r} (it has: {', '.join(sorted(dataset.keys()))})")
        return dataset[split]
    return dataset


def _read_table_file(path: Path, *, split: str, documents_dir: str | Path | None) -> RawSource:
    if path.suffix.lower() == ".parquet":
        return _read_parquet_files([path], root=path.parent, split=split, documents_dir=documents_dir)
    datasets = _import_datasets()
    try:
        rows = datasets.Dataset.from_file(str(path), in_memory=True).to_list()
    except Exception as exc:  # datasets/pyarrow raise many types for a bad file
        raise DataError(f"cannot read the arrow file {path}: {_short(exc)}") from None
    folders = [path.parent, path.parent.parent]
    return _hf_source(
        rows, str(path), _documents_dir(documents_dir, [f / DOCUMENTS_DIR for f in folders]), folders
    )


def _read_parquet_files(
    files: list[Path], *, root: Path, split: str, documents_dir: str | Path | None
) -> RawSource:
    datasets = _import_datasets()
    # A throw-away cache: the rows are copied out at once, and the user's HF cache stays untouched.
    with tempfile.TemporaryDirectory(prefix="docab-hf-") as cache:
        try:
            dataset = datasets.Dataset.from_parquet(
                [str(f) for f in files], split=split, cache_dir=cache, keep_in_memory=True
            )
            rows = dataset.to_list()
        except Exception as exc:
            raise DataError(f"cannot read parquet data in {root}: {_short(exc)}") from None
    folders = [root, root.parent]
    return _hf_source(
        rows,
        ", ".join(str(f) for f in files),
        _documents_dir(documents_dir, [f / DOCUMENTS_DIR for f in folders]),
        folders,
    )


def _read_saved_dataset(path: Path, *, split: str, documents_dir: str | Path | None) -> RawSource:
    datasets = _import_datasets()
    try:
        dataset = _pick_split(datasets.load_from_disk(str(path), keep_in_memory=True), split, str(path))
        rows = dataset.to_list()
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"cannot read the saved dataset {path}: {_short(exc)}") from None
    folders = [path, path.parent]
    return _hf_source(
        rows, str(path), _documents_dir(documents_dir, [f / DOCUMENTS_DIR for f in folders]), folders
    )


def _read_hub(dataset_id: str, *, split: str, documents_dir: str | Path | None) -> RawSource:
    datasets = _import_datasets()
    try:
        rows = datasets.load_dataset(dataset_id, split=split).to_list()
    except Exception as exc:
        raise DataError(
            f"cannot load the Hugging Face dataset {dataset_id!r} ({_short(exc)}). Without Hub access, download "
            "its parquet and documents/ elsewhere and pass that folder instead"
        ) from None
    docs = Path(documents_dir).expanduser() if documents_dir is not None else None
    return _hf_source(rows, f"{HUB_PREFIX}{dataset_id}", docs, [])


def _import_datasets() -> Any:
    try:
        import datasets
    except ModuleNotFoundError:
        raise DataError(
            "reading Hugging Face data needs the 'datasets' package: pip install datasets"
        ) from None
    datasets.disable_progress_bars()
    return datasets


# ------------------------------------------------------------------------------------ helpers


def _documents_dir(explicit: str | Path | None, candidates: list[Path]) -> Path | None:
    if explicit is not None:
        return Path(explicit).expanduser()
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0] if candidates else None


def _first_file(candidates: list[Path]) -> Path | None:
    return next((c for c in candidates if c.is_file()), None)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
