"""The built-in suite: a small MMLongBench-Doc-shaped benchmark the project generates itself.

``ensure_suite(path=None) -> Path`` returns a folder in the benchmark's GitHub layout
(``samples.json``, ``documents/*.pdf``, plus ``suite.json`` naming the suite version), generating
it on first use, seeded and deterministic, into ``path`` or the cache (``$DOCAB_CACHE``, else
``$XDG_CACHE_HOME/docab`` or ``~/.cache/docab``). ``load_questions(ensure_suite())`` reads it like
the real benchmark. ``ensure_suite_corpus(path=None) -> Path`` also converts its PDFs (once) into
``<suite>/corpus`` with the default converter.

Nothing large is kept in git: three PDFs of four pages and 29 questions are drawn from ``content``
by ``render`` in about a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final

SUITE_VERSION: Final = 1
SUITE_SEED: Final = 20240917
MARKER: Final = "suite.json"
CACHE_ENV: Final = "DOCAB_CACHE"


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docab"


def default_suite_path() -> Path:
    return cache_dir() / f"suite-v{SUITE_VERSION}"


def _samples_bytes(rows: list[dict[str, str]]) -> bytes:
    return (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _is_complete(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        samples = (folder / "samples.json").read_bytes()
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict)
        and marker.get("name") == "docab-suite"
        and marker.get("version") == SUITE_VERSION
        and marker.get("samples_sha256") == hashlib.sha256(samples).hexdigest()
        and all((folder / "documents" / name).is_file() for name in marker.get("documents", []))
    )


def generate_suite(folder: Path) -> None:
    """Write the suite into ``folder`` (created; must not exist or be empty)."""
    from docab_benchmark.suite.content import build_documents, hidden_answer_leaks, samples
    from docab_benchmark.suite.render import render_pdf

    documents = build_documents(SUITE_SEED)
    leaks = hidden_answer_leaks(documents)
    if leaks:  # a broken generator, not a user error
        raise RuntimeError("suite answers leak into the text layer: " + "; ".join(leaks))
    (folder / "documents").mkdir(parents=True, exist_ok=True)
    for doc in documents:
        (folder / "documents" / doc.doc_id).write_bytes(render_pdf(doc))
    samples_bytes = _samples_bytes(samples(documents))
    (folder / "samples.json").write_bytes(samples_bytes)
    marker = {
        "name": "docab-suite",
        "version": SUITE_VERSION,
        "seed": SUITE_SEED,
        "samples_sha256": hashlib.sha256(samples_bytes).hexdigest(),
        "documents": [doc.doc_id for doc in documents],
    }
    (folder / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def ensure_suite(path: str | Path | None = None) -> Path:
    """The suite folder, generated on first use (see the module docstring). Raises ``OSError`` if unwritable,
    ``FileExistsError`` if ``path`` is a non-empty folder that is not the suite."""
    folder = Path(path).expanduser() if path is not None else default_suite_path()
    if _is_complete(folder):
        return folder
    if folder.exists() and any(folder.iterdir()) and not (folder / MARKER).exists():
        raise FileExistsError(f"{folder} is not empty and holds no docab suite: give an empty or new folder")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    try:
        generate_suite(staging)
        staging.chmod(0o755)
        if folder.exists():  # an older or partial suite: replace it whole
            shutil.rmtree(folder)
        try:
            os.replace(staging, folder)
        except OSError:
            if not _is_complete(folder):  # another process won the race with a complete suite: fine
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def ensure_suite_corpus(path: str | Path | None = None, *, jobs: int = 1) -> Path:
    """The suite converted to the markdown corpus (``<suite>/corpus``); converted once, then reused.

    Without OCR: the suite's chart and figure answers exist only inside raster images by design
    (they test tools that look at images), and OCR would put them in the text; it would also make
    the demo's corpus depend on whether Tesseract's language data is installed.
    """
    from docab_benchmark.mmlongbench.corpus import (
        ConversionError,
        RenderSettings,
        convert_corpus,
        get_converter,
    )
    from docab_benchmark.mmlongbench.corpus.ocr import OcrSettings

    folder = ensure_suite(path)
    corpus = folder / "corpus"
    converter = get_converter("pypdfium2", RenderSettings(ocr=OcrSettings(mode="never")))
    report = convert_corpus(folder / "documents", corpus, jobs=jobs, converter=converter)
    if report.failed:
        raise ConversionError(
            f"the suite could not be converted: {report.failed[0].source}: {report.failed[0].error}"
        )
    return corpus
