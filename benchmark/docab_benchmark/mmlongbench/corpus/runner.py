"""Convert a PDF or a folder of PDFs into the markdown corpus: planning, workers, manifest, resume.

Guarantees:

- Deterministic: the same PDFs, converter version and settings give byte-identical files
  (no timestamps; figures and pages named by page number; JSON with sorted keys).
- Resumable: a document whose PDF SHA-256, converter name, version and settings match its
  manifest entry (status ``ok``, folder present) is skipped; failed documents are retried.
- Parallel: pages are converted in chunks across worker processes, so one long PDF uses every core.
- Failure-tolerant: a broken or encrypted PDF is recorded in the manifest with its error and the
  rest goes on.
- Confined: everything is written under the output folder. A document is built in a fresh hidden
  folder there and renamed into place when complete (a killed run leaves no half document), a
  pre-existing symlink in the way is removed rather than followed, and the manifest is replaced
  atomically.
- Shardable: ``shard=(i, N)`` converts only the PDFs whose file name falls in shard i of N
  (:func:`docab_benchmark.shards.shard_of`; folder names are chosen over the whole input first, so
  they do not depend on the split) and records them in ``manifest.shard-i-of-N.json`` instead of
  ``manifest.json``. Shards therefore never write the same file: they can share one output folder
  (run at the same time, on one machine or a shared filesystem, with no lock), or convert into
  folders of their own that are then copied together. Readers (:func:`read_manifest`,
  :func:`corpus_index`) see every manifest of the folder as one; where two list the same document,
  the entry that matches the document's own ``meta.json`` (the record of what is on disk) wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from docab_benchmark.mmlongbench.corpus.markdown import assemble_document
from docab_benchmark.mmlongbench.corpus.model import ConversionError, Converter, PageContent
from docab_benchmark.mmlongbench.corpus.wordspace import restore_word_spaces
from docab_benchmark.shards import shard_of

MANIFEST: Final = "manifest.json"
SHARD_MANIFESTS: Final = re.compile(r"manifest\.shard-[1-9][0-9]*-of-[1-9][0-9]*\.json")
MANIFEST_FORMAT: Final = "docab-corpus/1"
DOCUMENT_FILE: Final = "document.md"
META_FILE: Final = "meta.json"
CHUNK_PAGES: Final = 8
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

Status = Literal["ok", "error"]


@dataclass(frozen=True)
class DocumentResult:
    """The outcome for one PDF, as recorded in the manifest."""

    name: str  # folder name under the output directory
    source: str  # the PDF's file name
    sha256: str
    status: Status
    error: str | None = None
    pages: int = 0
    pages_converted: int = 0
    skipped: bool = False  # resumed: already converted
    pages_ocr: int = 0  # pages whose text came from OCR, in whole or in part

    def manifest_entry(self, converter: Converter) -> dict[str, Any]:
        return {
            "source": self.source,
            "sha256": self.sha256,
            "status": self.status,
            "error": self.error,
            "pages": self.pages,
            "pages_converted": self.pages_converted,
            "converter": converter.name,
            "converter_version": converter.version,
            "settings": converter.settings(),
            "document": f"{self.name}/{DOCUMENT_FILE}" if self.status == "ok" else None,
        }


@dataclass(frozen=True)
class Progress:
    """A progress event: ``pages_done`` of ``pages_total`` so far; ``document`` just advanced or finished."""

    pages_done: int
    pages_total: int
    document: str
    finished: DocumentResult | None = None


@dataclass(frozen=True)
class ConversionReport:
    """What a conversion did; ``warnings`` are the converter's ``preflight`` warnings (e.g. OCR unavailable)."""

    output: Path
    results: tuple[DocumentResult, ...]
    warnings: tuple[str, ...] = ()

    @property
    def converted(self) -> list[DocumentResult]:
        return [r for r in self.results if r.status == "ok" and not r.skipped]

    @property
    def skipped(self) -> list[DocumentResult]:
        return [r for r in self.results if r.skipped]

    @property
    def failed(self) -> list[DocumentResult]:
        return [r for r in self.results if r.status == "error"]

    @property
    def pages_converted(self) -> int:
        return sum(r.pages_converted for r in self.converted)

    @property
    def pages_ocr(self) -> int:
        return sum(r.pages_ocr for r in self.converted)


def find_pdfs(source: Path) -> list[Path]:
    """``source`` itself when it is a PDF file, else the PDFs directly in the folder, sorted by name."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise ConversionError(f"{source} is neither a PDF file nor a folder")
    return sorted(
        (p for p in source.iterdir() if p.suffix.lower() == ".pdf" and p.is_file()), key=lambda p: p.name
    )


def folder_names(pdfs: Sequence[Path]) -> list[str]:
    """A safe, unique folder name per PDF: its stem with unsafe characters replaced, ``-2``... on clashes."""
    names: list[str] = []
    taken: set[str] = {MANIFEST.lower()}
    for pdf in pdfs:
        base = _UNSAFE_NAME.sub("_", pdf.stem).strip("._") or "document"
        name, n = base, 1
        while name.lower() in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name.lower())
        names.append(name)
    return names


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_name(shard: tuple[int, int] | None = None) -> str:
    """The manifest a conversion writes: ``manifest.json``, or ``manifest.shard-i-of-N.json`` for a shard."""
    if shard is None:
        return MANIFEST
    index, count = shard
    if count < 1 or not 1 <= index <= count:
        raise ConversionError(f"a shard is (i, N) with 1 <= i <= N, got ({index}, {count})")
    return f"manifest.shard-{index}-of-{count}.json"


def manifest_files(out_dir: Path) -> list[Path]:
    """The manifests of a corpus folder: ``manifest.json`` first, then the shards' by name."""
    out_dir = Path(out_dir)
    try:
        shards = sorted(p for p in out_dir.iterdir() if SHARD_MANIFESTS.fullmatch(p.name) and p.is_file())
    except OSError:
        return []
    main = out_dir / MANIFEST
    return ([main] if main.is_file() else []) + shards


def _manifest_documents(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    documents = data.get("documents") if isinstance(data, dict) else None
    return documents if isinstance(documents, dict) else {}


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """Every document entry of the folder's manifests (``manifest.json`` and the shards'), by folder
    name. A document listed by several takes the entry that matches its ``meta.json``, else the one
    read last (the shards' come after ``manifest.json``)."""
    out_dir = Path(out_dir)
    candidates: dict[str, list[Any]] = {}
    for path in manifest_files(out_dir):
        for name, entry in _manifest_documents(path).items():
            candidates.setdefault(name, []).append(entry)
    merged: dict[str, Any] = {}
    for name, entries in candidates.items():
        if len(entries) == 1:
            merged[name] = entries[0]
            continue
        meta = _read_meta(out_dir / name)
        merged[name] = next((e for e in entries if _describes(e, meta)), entries[-1])
    return merged


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describes(entry: Any, meta: dict[str, Any] | None) -> bool:
    """Whether a manifest entry records the conversion whose ``meta.json`` is on disk."""
    return (
        isinstance(entry, dict)
        and meta is not None
        and entry.get("status") == "ok"
        and all(
            entry.get(key) == meta.get(key)
            for key in ("sha256", "converter", "converter_version", "settings")
        )
    )


def shard_positions(pdfs: Sequence[Path], shard: tuple[int, int] | None) -> list[int]:
    """The positions of the PDFs that shard ``(i, N)`` converts (all of them without a shard)."""
    if shard is None:
        return list(range(len(pdfs)))
    index, count = shard
    return [n for n, pdf in enumerate(pdfs) if shard_of(pdf.name, count) == index]


def corpus_index(out_dir: Path) -> dict[str, Path]:
    """Converted documents of a corpus by PDF file name (the benchmark's ``doc_id``) -> their folder.

    Only documents converted successfully are listed; read from ``manifest.json``.
    """
    out_dir = Path(out_dir)
    index: dict[str, Path] = {}
    for name, entry in read_manifest(out_dir).items():
        if isinstance(entry, dict) and entry.get("status") == "ok" and isinstance(entry.get("source"), str):
            index[entry["source"]] = out_dir / name
    return index


def _write_json_atomic(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)  # replaces a symlink itself, never its target
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_current(entry: Any, sha256: str, converter: Converter, target: Path) -> bool:
    """The manifest says the document was converted from this PDF with these settings, and the
    folder on disk holds that conversion (its ``meta.json`` agrees: another run, a shard of
    another split, may have replaced it since)."""
    return (
        isinstance(entry, dict)
        and entry.get("status") == "ok"
        and entry.get("sha256") == sha256
        and entry.get("converter") == converter.name
        and entry.get("converter_version") == converter.version
        and entry.get("settings") == converter.settings()
        and not target.is_symlink()
        and (target / DOCUMENT_FILE).is_file()
        and _describes(entry, _read_meta(target))
    )


def _convert_chunk(converter: Converter, pdf: str, first: int, last: int, out_dir: str) -> list[PageContent]:
    return converter.convert_pages(Path(pdf), first, last, Path(out_dir))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:500]


@dataclass
class _Job:
    pdf: Path
    name: str
    sha256: str
    pages: int
    title: str
    staging: Path
    pending: int
    results: dict[int, list[PageContent]] = field(default_factory=dict)
    error: str | None = None


class _InlineExecutor:
    """Runs chunks in this process (``jobs=1``): no pool start-up, easy to debug."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def convert_corpus(
    source: Path | Iterable[Path],
    out_dir: Path,
    *,
    converter: Converter | None = None,
    jobs: int | None = None,
    max_pages: int | None = None,
    force: bool = False,
    progress: Callable[[Progress], None] | None = None,
    shard: tuple[int, int] | None = None,
) -> ConversionReport:
    """Convert the PDFs of ``source`` (a PDF, a folder, or a list of PDFs) into ``out_dir``.

    ``jobs``: worker processes (default: the number of CPUs; 1 converts in this process).
    ``max_pages``: convert only the first pages of each PDF (e.g. 120, the official view).
    ``force``: convert again even when the manifest says a document is current.
    ``shard``: ``(i, N)``, convert only shard i of N of the PDFs (by file name), recorded in
    ``manifest.shard-i-of-N.json`` (see the module's notes).
    """
    from docab_benchmark.mmlongbench.corpus.pdfium import PdfiumConverter

    converter = converter or PdfiumConverter()
    pdfs = (
        find_pdfs(Path(source))
        if isinstance(source, (str, Path))
        else sorted(map(Path, source), key=lambda p: p.name)
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_real = out_dir.resolve()
    manifest_file = manifest_name(shard)
    warnings = converter.preflight()
    known = read_manifest(out_dir)
    # A shard's manifest lists its own documents only, so no two shards write one file.
    manifest = {} if shard is not None else dict(known)
    results: dict[str, DocumentResult] = {}
    jobs_by_name: dict[str, _Job] = {}
    all_names = folder_names(pdfs)  # over the whole input, so a name does not depend on the split
    chosen = shard_positions(pdfs, shard)
    pdfs = [pdfs[n] for n in chosen]
    names = [all_names[n] for n in chosen]

    for pdf, name in zip(pdfs, names, strict=True):
        target = out_dir / name
        if target.resolve().parent != out_real and not target.is_symlink():
            raise ConversionError(f"refusing to write {target}: outside {out_dir}")
        try:
            sha = file_sha256(pdf)
        except OSError as exc:
            results[name] = DocumentResult(
                name, pdf.name, "", "error", f"cannot read the file ({exc.strerror or exc})"
            )
            continue
        if not force and _is_current(known.get(name), sha, converter, target):
            entry = known[name]
            results[name] = DocumentResult(
                name,
                pdf.name,
                sha,
                "ok",
                None,
                int(entry.get("pages", 0)),
                int(entry.get("pages_converted", 0)),
                True,
            )
            continue
        try:
            info = converter.open(pdf)
        except ConversionError as exc:
            results[name] = DocumentResult(name, pdf.name, sha, "error", _one_line(str(exc)))
            continue
        count = info.page_count if max_pages is None else min(info.page_count, max_pages)
        staging = Path(tempfile.mkdtemp(dir=out_dir, prefix=f".partial-{name}-"))
        staging.chmod(0o755)  # mkdtemp makes it private; the finished folder is an ordinary one
        (staging / "pages").mkdir()
        (staging / "figures").mkdir()
        jobs_by_name[name] = _Job(
            pdf,
            name,
            sha,
            info.page_count,
            info.title,
            staging,
            pending=len(range(1, count + 1, CHUNK_PAGES)),
        )

    total_pages = sum(_last(job, max_pages) for job in jobs_by_name.values())
    done_pages = 0

    def record(result: DocumentResult) -> None:
        results[result.name] = result
        manifest[result.name] = result.manifest_entry(converter)
        _write_manifest(out_dir / manifest_file, manifest, converter)
        if progress:
            progress(Progress(done_pages, total_pages, result.name, finished=result))

    for result in list(results.values()):
        manifest[result.name] = result.manifest_entry(converter)
    _write_manifest(out_dir / manifest_file, manifest, converter)
    if progress and jobs_by_name:
        progress(Progress(0, total_pages, ""))

    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    executor: Any
    if workers <= 1 or not jobs_by_name:
        executor = _InlineExecutor()
    else:
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=_process_context())
    try:
        futures: dict[Future[Any], tuple[_Job, int, int]] = {}
        for job in jobs_by_name.values():
            last_page = _last(job, max_pages)
            for first in range(1, last_page + 1, CHUNK_PAGES):
                last = min(first + CHUNK_PAGES - 1, last_page)
                future = executor.submit(
                    _convert_chunk, converter, str(job.pdf), first, last, str(job.staging)
                )
                futures[future] = (job, first, last)
        for future in as_completed(futures):
            job, first, last = futures[future]
            try:
                job.results[first] = future.result()
            except ConversionError as exc:
                job.error = job.error or _one_line(str(exc))
            except Exception as exc:  # a crashed worker fails its document, not the run
                job.error = job.error or _one_line(f"conversion failed: {type(exc).__name__}: {exc}")
            done_pages += last - first + 1
            job.pending -= 1
            if progress:
                progress(Progress(done_pages, total_pages, job.name))
            if job.pending == 0:
                record(_finish(job, out_dir, converter, max_pages))
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        for job in jobs_by_name.values():
            shutil.rmtree(job.staging, ignore_errors=True)

    ordered = tuple(results[name] for name in names if name in results)
    return ConversionReport(out_dir, ordered, warnings)


def _process_context() -> Any:
    """``fork`` on Linux: workers start in milliseconds and callers need no ``__main__`` guard
    (``spawn`` re-imports the caller's main module). Elsewhere ``spawn``, the platform default."""
    import multiprocessing
    import sys

    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def _last(job: _Job, max_pages: int | None) -> int:
    return job.pages if max_pages is None else min(job.pages, max_pages)


def _write_manifest(path: Path, documents: dict[str, Any], converter: Converter) -> None:
    _write_json_atomic(
        path,
        {"format": MANIFEST_FORMAT, "converter": converter.name, "documents": documents},
    )


def _text_check_entry(page: PageContent) -> dict[str, object] | None:
    check = page.text_check
    if check is None:
        return None
    return {"verdict": check.verdict, "chars": check.chars, "recognisable": check.recognisable}


def _ocr_entry(page: PageContent) -> dict[str, object] | None:
    """meta.json's record of a page's OCR: engine, version, languages, dpi, method, why, confidence, words kept."""
    ocr = page.ocr
    if ocr is None:
        return None
    return {
        "engine": ocr.engine,
        "version": ocr.version,
        "languages": ocr.languages,
        "dpi": ocr.dpi,
        "method": ocr.method,
        "reason": ocr.reason,
        "confidence": ocr.confidence,
        "words": ocr.words,
    }


def _finish(job: _Job, out_dir: Path, converter: Converter, max_pages: int | None) -> DocumentResult:
    if job.error:
        return DocumentResult(job.name, job.pdf.name, job.sha256, "error", job.error, job.pages)
    pages = restore_word_spaces([page for first in sorted(job.results) for page in job.results[first]])
    assembled = assemble_document(pages, metadata_title=job.title, source_name=job.pdf.name)
    (job.staging / DOCUMENT_FILE).write_text(assembled.markdown, encoding="utf-8")
    meta = {
        "format": "docab-corpus-document/1",
        "source": job.pdf.name,
        "sha256": job.sha256,
        "title": assembled.title,
        "page_count": job.pages,
        "pages_converted": len(pages),
        "headings": assembled.headings,
        "converter": converter.name,
        "converter_version": converter.version,
        "settings": converter.settings(),
        "pages": [
            {
                "page": page.number,
                "lines": [span.first_line, span.last_line],
                "image": page.image,
                "width": page.image_size[0],
                "height": page.image_size[1],
                "dpi": page.dpi,
                "text_lines": len(page.lines),
                "text_source": page.text_source,
                "text_check": _text_check_entry(page),
                "ocr": _ocr_entry(page),
                "spaces_restored": len(page.spaces_restored),
                "spaces_restored_words": list(page.spaces_restored),
                "figures": [f.path for f in page.figures],
                "error": page.error,
            }
            for page, span in zip(pages, assembled.spans, strict=True)
        ],
    }
    _write_json_atomic(job.staging / META_FILE, meta)
    target = out_dir / job.name
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    os.replace(job.staging, target)
    ocr_pages = sum(1 for page in pages if page.text_source != "pdf")
    return DocumentResult(
        job.name, job.pdf.name, job.sha256, "ok", None, job.pages, len(pages), pages_ocr=ocr_pages
    )
