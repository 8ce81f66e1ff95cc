"""``docab findability``: the share of answers a converter's text holds, docab against peer converters.

A thin face over ``docab_benchmark.mmlongbench.findability`` (the matching rule and the tally) and
``docab_benchmark.mmlongbench.pagetext`` (page texts per converter).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from docab.cli.errors import CommandError

CONVERTERS_HELP = """\
converters:
  docab         docab convert with OCR where the text layer fails (--ocr auto, the default)
  docab-no-ocr  docab convert with --ocr never (the text layer alone)
  pypdf, pdfplumber, markitdown, pymupdf4llm
                peers, as comparisons only: they are not docab dependencies. Run them through
                uv, which installs them for this one command, e.g.
                uv run --with pypdf --with pdfplumber docab findability --converters docab,pypdf,pdfplumber

A question counts when its gold answer is a Str, Int, Float or List with evidence pages inside the
PDF; it is found when its answer (every item of a list) occurs in the converter's text of its
evidence pages (and, second column, anywhere in the document). The matching rule is documented in
docab_benchmark/mmlongbench/findability.py.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "findability",
        help="how many answers each converter's text holds (docab vs pypdf, pdfplumber, ...)",
        description="For the answerable questions of an MMLongBench-Doc folder, the share whose answer "
        "occurs in each converter's text of their evidence pages, and anywhere in the document, overall "
        "and by evidence source, with the questions counted.",
        epilog=CONVERTERS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data", default=None, metavar="PATH", help="question data (as for docab data check)"
    )
    parser.add_argument("--documents", type=Path, default=None, metavar="DIR", help="folder of the PDFs")
    parser.add_argument(
        "--converters",
        default="docab,docab-no-ocr",
        metavar="LIST",
        help="comma-separated converters (default docab,docab-no-ocr; see below)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep docab's converted corpus here and reuse it on the next run (default: a temporary folder); "
        "docab-no-ocr uses DIR-no-ocr",
    )
    parser.add_argument("--jobs", type=int, default=None, help="worker processes for docab convert")
    parser.add_argument(
        "--ocr-dpi", type=float, default=None, metavar="DPI", help="docab's OCR resolution (default 200)"
    )
    parser.add_argument(
        "--ocr-languages", default="eng", metavar="LANGS", help="docab's OCR languages (default eng)"
    )
    parser.add_argument(
        "--ocr-passes",
        default="otsu+sauvola",
        metavar="PASSES",
        help="docab's OCR thresholding passes, as for docab convert (default otsu+sauvola; otsu for one pass)",
    )
    parser.add_argument(
        "--word-spaces",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="docab's word-space repair, as for docab convert (default: on; --no-word-spaces to compare)",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.set_defaults(func=_run)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the conversion's worker processes)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _docab_texts(
    pdfs: list[Path], corpus: Path, ocr: Any, jobs: int | None, word_spaces: bool
) -> tuple[dict[str, list[str] | None], str]:
    """Page texts of docab's corpus (converted or resumed into ``corpus``) and a line on what it cost."""
    from docab_benchmark.mmlongbench.corpus import RenderSettings, convert_corpus, corpus_index, get_converter
    from docab_benchmark.mmlongbench.pagetext import corpus_page_texts

    converter = get_converter("pypdfium2", RenderSettings(ocr=ocr, word_spaces=word_spaces))
    for warning in converter.preflight():
        print(f"docab findability: warning: {warning}", file=sys.stderr)
    cpu = _cpu_seconds()
    report = convert_corpus(pdfs, corpus, converter=converter, jobs=jobs)
    cpu = _cpu_seconds() - cpu
    index = corpus_index(corpus)
    texts = {pdf.name: corpus_page_texts(index[pdf.name]) if pdf.name in index else None for pdf in pdfs}
    pages = [
        page
        for folder in index.values()
        for page in json.loads((folder / "meta.json").read_text(encoding="utf-8"))["pages"]
    ]
    ocr_pages = sum(1 for page in pages if page.get("text_source", "pdf") != "pdf")
    spaces = sum(int(page.get("spaces_restored", 0)) for page in pages)
    if report.converted:
        cost = f"converted {report.pages_converted} pages in {cpu:.1f} CPU-s"
    else:
        cost = "resumed from the corpus (no conversion time)"
    return texts, f"{cost}; {ocr_pages} pages with OCR text; {spaces} word spaces restored; corpus {corpus}"


def _peer_texts(
    name: str, pdfs: list[Path], counts: dict[str, int], command: str
) -> dict[str, list[str] | None]:
    from docab_benchmark.mmlongbench.pagetext import PeerMissing, peer

    try:
        found = peer(name, command)
    except PeerMissing as exc:
        raise CommandError(str(exc)) from None
    texts: dict[str, list[str] | None] = {}
    for pdf in pdfs:
        try:
            texts[pdf.name] = found.extract(pdf, counts[pdf.name])
        except Exception as exc:  # a peer failing on one PDF is a finding, not a crash
            print(
                f"docab findability: {name} failed on {pdf.name}: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            texts[pdf.name] = None
    return texts


def _command_line(args: argparse.Namespace) -> str:
    """This command as the user would type it again (for the ``uv run --with`` hint)."""
    words = ["docab", "findability"]
    if args.data:
        words += ["--data", args.data]
    if args.documents:
        words += ["--documents", str(args.documents)]
    words += ["--converters", args.converters]
    if args.corpus:
        words += ["--corpus", str(args.corpus)]
    for flag, value in (("--jobs", args.jobs), ("--ocr-dpi", args.ocr_dpi)):
        if value is not None:
            words += [flag, str(value)]
    if args.ocr_passes != "otsu+sauvola":
        words += ["--ocr-passes", args.ocr_passes]
    if args.ocr_languages != "eng":
        words += ["--ocr-languages", args.ocr_languages]
    if not args.word_spaces:
        words += ["--no-word-spaces"]
    return " ".join(shlex.quote(word) for word in words)


def _run(args: argparse.Namespace) -> int:
    from docab.cli.mmlongbench import ocr_settings, resolve_data
    from docab_benchmark.mmlongbench.errors import DataError
    from docab_benchmark.mmlongbench.findability import find_answers, format_findings
    from docab_benchmark.mmlongbench.pagetext import PEERS, pdf_page_count
    from docab_benchmark.mmlongbench.questions import load_questions

    names = [name.strip() for name in args.converters.split(",") if name.strip()]
    unknown = [name for name in names if name not in ("docab", "docab-no-ocr", *PEERS)]
    if not names or unknown:
        raise CommandError(
            f"unknown converter(s) {', '.join(unknown) or '(none given)'}; choose from docab, docab-no-ocr, "
            + ", ".join(PEERS)
        )
    if args.jobs is not None and args.jobs < 1:
        raise CommandError("--jobs must be at least 1")
    ocr = ocr_settings(args, "auto")  # checked before any data is read
    try:
        qset = load_questions(resolve_data(args.data), documents_dir=args.documents)
        pdfs = [qset.pdf_path(doc_id) for doc_id in qset.doc_ids]
    except DataError as exc:
        raise CommandError(str(exc)) from None
    counts: dict[str, int] = {}
    present: list[Path] = []
    for pdf in pdfs:
        count = pdf_page_count(pdf) if pdf.is_file() else None
        if count is None:
            print(
                f"docab findability: {pdf.name}: missing or unreadable, its questions are left out",
                file=sys.stderr,
            )
            continue
        counts[pdf.name] = count
        present.append(pdf)
    command = _command_line(args)
    from docab_benchmark.mmlongbench.pagetext import PeerMissing, peer

    for name in names:  # every peer checked before any work starts
        if name in PEERS:
            try:
                peer(name, command)
            except PeerMissing as exc:
                raise CommandError(str(exc)) from None
    results, seconds, notes = [], {}, []
    with tempfile.TemporaryDirectory(prefix="docab-findability-") as scratch:
        for name in names:
            start = time.perf_counter()
            if name in ("docab", "docab-no-ocr"):
                base = args.corpus if args.corpus is not None else Path(scratch) / "corpus"
                corpus = base if name == "docab" else base.with_name(base.name + "-no-ocr")
                settings = ocr if name == "docab" else replace(ocr, mode="never")
                texts, note = _docab_texts(present, corpus, settings, args.jobs, args.word_spaces)
                notes.append(f"{name}: {note}")
            else:
                texts = _peer_texts(name, present, counts, command)
            seconds[name] = time.perf_counter() - start
            results.append(find_answers(name, list(qset), texts, counts))
    if args.json:
        payload = [
            {
                "converter": r.converter,
                "overall": asdict(r.overall),
                "by_source": {k: asdict(v) for k, v in r.by_source.items()},
                "documents_missing": list(r.documents_missing),
                "seconds": round(seconds[r.converter], 2),
            }
            for r in results
        ]
        print(json.dumps({"data": qset.version, "pdfs": len(present), "converters": payload}, indent=2))
    else:
        pages = sum(counts.values())
        print(f"{qset.version}: {len(present)} PDFs, {pages} pages; seconds = time to produce the page texts")
        print(format_findings(results, seconds))
        for note in notes:
            print(note)
    return 0
