"""``docab data check``, ``docab data suite``, ``docab convert`` and ``docab score``: thin faces over the benchmark cores."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError
from docab.cli.run import shard_option

if TYPE_CHECKING:
    from rich.progress import Progress

    from docab_benchmark.mmlongbench.corpus import Progress as ConversionProgress
    from docab_benchmark.mmlongbench.corpus.ocr import OcrSettings
    from docab_benchmark.mmlongbench.corpus.textcheck import OcrMode
    from docab_benchmark.mmlongbench.questions import QuestionSet

DATA_ENV = "DOCAB_DATA"

DATA_HELP = f"""\
Question data: a clone of github.com/mayubo2333/MMLongBench-Doc, a folder holding samples.json and
documents/ (such as ../shared/data/mmlongbench-dev), a .parquet/.arrow file or datasets folder of the
Hugging Face release, or hf:yubo2333/MMLongBench-Doc. Default: ${DATA_ENV}, else the built-in suite."""


def register(subparsers: Any) -> None:
    data = subparsers.add_parser(
        "data",
        help="inspect benchmark data (check for known defects, build the built-in suite)",
        description="Inspect MMLongBench-Doc data or the built-in suite.",
    )
    data_sub = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)
    check = data_sub.add_parser(
        "check",
        help="report the set's known defects and missing or short PDFs",
        description="Load the questions, open every cited PDF, and report the known defects of the set "
        "(page 0 citations, 1418, printed page numbers, pages above 120, evidence/answerability "
        "mismatches, byte-identical PDFs, non-integer Int answers, empty lists) and any PDF that is "
        "missing, unreadable or shorter than its questions cite. Exit 1 when PDFs are missing or unreadable.",
        epilog=DATA_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_arguments(check)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(func=_run_check)

    suite = data_sub.add_parser(
        "suite",
        help="generate the built-in suite (and its converted corpus) and print where it is",
        description="Generate the built-in suite on first use (seeded, deterministic) into the cache "
        "($DOCAB_CACHE, else ~/.cache/docab) or --path, and print its folder.",
    )
    suite.add_argument("--path", type=Path, help="folder to create the suite in (default: the cache)")
    suite.add_argument("--convert", action="store_true", help="also convert its PDFs into <suite>/corpus")
    suite.set_defaults(func=_run_suite)

    convert = subparsers.add_parser(
        "convert",
        help="convert PDFs into a markdown corpus (page headings, page images, figures)",
        description="Turn each PDF into OUT/<stem>/document.md ('## Page N' per page, the page image at "
        "144 dpi under it, the page text with headings from font sizes), pages/, figures/ and meta.json; "
        "OUT/manifest.json records every document's status. Re-running skips documents already "
        "converted from the same PDF with the same converter version and settings. Pages whose text "
        "layer is missing or garbled are read by OCR (Tesseract), marked as such in document.md and "
        "meta.json.",
        epilog="examples:\n"
        "  docab convert ../shared/data/mmlongbench-dev/documents --out corpus/dev\n"
        "  docab convert scans/ --out corpus/scans --ocr always --ocr-languages eng+deu\n"
        "  docab convert pdfs/ --out corpus/all --shard auto   # in each task of a Slurm array or K8s job\n\n"
        "Shards (--shard i/N, numbered from 1, or auto as for docab run) split the PDFs by file name:\n"
        "each converts its own subset and records it in OUT/manifest.shard-i-of-N.json, so shards can\n"
        "write into one shared OUT at the same time, or into folders of their own that are then copied\n"
        "into one (no file name collides); readers see all the manifests of a folder as one.\n\n"
        "OCR needs the tesserocr package (a docab dependency) and Tesseract's language data\n"
        "(Debian: apt-get install tesseract-ocr-eng; one package per language; or set TESSDATA_PREFIX).\n"
        "Without them conversion goes on with the PDF text and says so once.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert.add_argument("input", type=Path, metavar="INPUT", help="a PDF or a folder of PDFs")
    convert.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder (created)")
    convert.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPU count)")
    convert.add_argument(
        "--max-pages", type=int, default=None, help="only the first N pages (120: the official view)"
    )
    convert.add_argument("--dpi", type=float, default=144.0, help="page image resolution (default 144)")
    convert.add_argument("--no-figures", action="store_true", help="do not extract embedded figures")
    convert.add_argument("--force", action="store_true", help="convert again even if up to date")
    convert.add_argument("--converter", default="pypdfium2", help="converter name (default pypdfium2)")
    convert.add_argument(
        "--ocr",
        choices=("auto", "always", "never"),
        default="auto",
        help="auto (default): OCR pages with almost no text but ink on them, or garbled text; "
        "always: every page's text comes from OCR; never: PDF text only",
    )
    convert.add_argument(
        "--ocr-languages",
        default="eng",
        metavar="LANGS",
        help="Tesseract languages joined by '+', e.g. eng+deu (default eng)",
    )
    convert.add_argument(
        "--ocr-dpi", type=float, default=None, metavar="DPI", help="render resolution for OCR (default 200)"
    )
    convert.add_argument(
        "--ocr-passes",
        default="otsu+sauvola",
        metavar="PASSES",
        help="Tesseract's thresholding passes: otsu+sauvola (default) reads each OCR'd page twice, "
        "a global then a local threshold, and keeps the second pass's words where the first read "
        "none (text on coloured boxes); otsu alone takes about half the OCR time",
    )
    convert.add_argument(
        "--word-spaces",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="put back a word space PDFium dropped ('offbut' -> 'off but') where the glyphs stand "
        "clearly apart and both halves are words the document uses elsewhere (default: on)",
    )
    convert.add_argument(
        "--shard",
        metavar="i/N|auto",
        help="convert only shard i of N of the PDFs (by file name), numbered from 1; auto: from the "
        "scheduler (DOCAB_SHARD, Slurm array, Kubernetes Indexed Job), as for docab run",
    )
    convert.set_defaults(func=_run_convert)

    score = subparsers.add_parser(
        "score",
        help="score a predictions file with the official MMLongBench-Doc rules",
        description="Score PREDICTIONS (JSON lines, or a JSON list as the official runners write): each "
        "record holds the benchmark's fields (answer, answer_format; evidence_pages, evidence_sources and "
        "doc_type for the breakdowns) plus 'pred'. Prints Acc and generalised F1 with the paper's breakdowns. "
        "A record without 'pred' scores 0; a record without answer/answer_format is reported and left out.",
    )
    score.add_argument(
        "predictions", type=Path, metavar="PREDICTIONS", help="predictions .jsonl (or .json list)"
    )
    score.add_argument("--out", type=Path, metavar="SCORED", help="write each record back with its 'score'")
    score.add_argument("--json", action="store_true", help="print the summary as JSON")
    score.set_defaults(func=_run_score)


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, metavar="PATH", help="question data (see below)")
    parser.add_argument("--documents", type=Path, default=None, metavar="DIR", help="folder of the PDFs")
    parser.add_argument(
        "--split", default="train", help="dataset split for Hugging Face data (default train)"
    )


def resolve_data(data: str | None) -> str:
    """The data source a command uses: the flag, else $DOCAB_DATA, else the built-in suite."""
    if data:
        return data
    if os.environ.get(DATA_ENV):
        return os.environ[DATA_ENV]
    from docab_benchmark.suite import ensure_suite

    return str(ensure_suite())


def _load(args: argparse.Namespace) -> QuestionSet:
    from docab_benchmark.mmlongbench.errors import DataError
    from docab_benchmark.mmlongbench.questions import load_questions

    try:
        return load_questions(resolve_data(args.data), documents_dir=args.documents, split=args.split)
    except DataError as exc:
        raise CommandError(str(exc)) from None


def _run_check(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from docab_benchmark.mmlongbench.datacheck import check_questions, format_report, inspect_documents

    qset = _load(args)
    report = check_questions(qset, inspect_documents(qset))
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(format_report(report, qset))
    return 1 if report.blocking else 0


def _run_suite(args: argparse.Namespace) -> int:
    from docab_benchmark.suite import ensure_suite, ensure_suite_corpus

    try:
        folder = ensure_suite(args.path)
        print(folder)
        if args.convert:
            print(ensure_suite_corpus(args.path))
    except OSError as exc:
        raise CommandError(f"cannot create the suite: {exc.strerror or exc}") from None
    return 0


def ocr_settings(args: argparse.Namespace, mode: OcrMode) -> OcrSettings:
    """The OCR settings of ``--ocr-passes``, ``--ocr-dpi`` and ``--ocr-languages`` (docab convert and
    docab findability share them), checked: a bad value is a one-line ``CommandError``."""
    from docab_benchmark.mmlongbench.corpus.ocr import (
        DEFAULT_OCR_DPI,
        OcrSettings,
        TesseractEngine,
        parse_passes,
    )

    try:
        passes = parse_passes(args.ocr_passes)
    except ValueError as exc:
        raise CommandError(f"--ocr-passes {exc}") from None
    dpi = DEFAULT_OCR_DPI if args.ocr_dpi is None else args.ocr_dpi
    if not 72 <= dpi <= 600:
        raise CommandError("--ocr-dpi must be between 72 and 600")
    languages = args.ocr_languages.strip()
    if not languages or not all(part.replace("_", "").isalnum() for part in languages.split("+")):
        raise CommandError(
            f"--ocr-languages {args.ocr_languages!r}: give Tesseract codes joined by '+', e.g. eng+deu"
        )
    return OcrSettings(mode=mode, languages=languages, dpi=dpi, engine=TesseractEngine(passes=passes))


def _run_convert(args: argparse.Namespace) -> int:
    from docab_benchmark.mmlongbench.corpus import (
        ConversionError,
        RenderSettings,
        convert_corpus,
        get_converter,
    )

    ocr = ocr_settings(args, args.ocr)
    if args.jobs is not None and args.jobs < 1:
        raise CommandError("--jobs must be at least 1")
    if args.max_pages is not None and args.max_pages < 1:
        raise CommandError("--max-pages must be at least 1")
    if not 18 <= args.dpi <= 600:
        raise CommandError("--dpi must be between 18 and 600")
    if not args.input.exists():
        raise CommandError(f"{args.input} does not exist")
    shard = shard_option(args.shard) if args.shard else None
    if shard is not None:
        print(f"docab convert: {shard.describe()}", file=sys.stderr)
    start = time.perf_counter()
    try:
        converter = get_converter(
            args.converter,
            RenderSettings(dpi=args.dpi, figures=not args.no_figures, ocr=ocr, word_spaces=args.word_spaces),
        )
        for warning in converter.preflight():
            print(f"docab convert: warning: {warning}", file=sys.stderr)
        with _progress_bar() as on_progress:
            report = convert_corpus(
                args.input,
                args.out,
                converter=converter,
                jobs=args.jobs,
                max_pages=args.max_pages,
                force=args.force,
                progress=on_progress,
                shard=shard.pair if shard else None,
            )
    except ConversionError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write to {args.out}: {exc.strerror or exc}") from None
    elapsed = time.perf_counter() - start
    pages = report.pages_converted
    rate = f" ({pages / elapsed:.1f} pages/s)" if pages and elapsed > 0 else ""
    ocr_pages = f", {report.pages_ocr} read by OCR" if report.pages_ocr else ""
    share = f" (shard {shard.index} of {shard.count})" if shard else ""
    print(
        f"converted {len(report.converted)} document(s), {pages} pages{ocr_pages} in {elapsed:.1f} s{rate}; "
        f"{len(report.skipped)} up to date; {len(report.failed)} failed -> {args.out}{share}"
    )
    for failed in report.failed:
        print(f"  failed: {failed.source}: {failed.error}", file=sys.stderr)
    return 1 if report.failed else 0


class _progress_bar:
    """A rich progress bar on stderr when it is a terminal; plain progress lines otherwise."""

    def __enter__(self) -> Callable[[ConversionProgress], None]:
        self._progress: Progress | None = None
        if not sys.stderr.isatty():
            return ProgressLines(sys.stderr)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        progress = Progress(
            TextColumn("converting"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("pages"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        )
        self._progress = progress
        progress.start()
        task = progress.add_task("", total=None)

        def update(event: ConversionProgress) -> None:
            progress.update(
                task, completed=event.pages_done, total=event.pages_total, description=event.document
            )

        return update

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.stop()


class ProgressLines:
    """Conversion progress as plain lines, for output that is not a terminal (CI logs, files): the
    first event, then at most one line every ``every_s`` seconds, and the last page."""

    def __init__(self, stream: Any, every_s: float = 10.0, clock: Any = time.monotonic) -> None:
        self.stream = stream
        self.every_s = every_s
        self.clock = clock
        self._last: float | None = None

    def __call__(self, event: Any) -> None:
        now = self.clock()
        finished = bool(event.pages_total) and event.pages_done >= event.pages_total
        if finished or self._last is None or now - self._last >= self.every_s:
            self._last = now
            print(
                f"converting: {event.pages_done}/{event.pages_total} pages ({event.document})",
                file=self.stream,
                flush=True,
            )


_SHOWN_PROBLEMS = 10  # lines of a predictions file named one by one; the rest are counted


def _run_score(args: argparse.Namespace) -> int:
    from docab_benchmark.mmlongbench.predictions import (
        PredictionError,
        format_summary,
        read_predictions,
        score_records,
    )

    try:
        records = read_predictions(args.predictions)
    except PredictionError as exc:
        raise CommandError(str(exc)) from None
    scored = score_records(records)
    if args.out:
        try:
            scored.write(args.out)
        except OSError as exc:
            raise CommandError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    if scored.problems and not scored.rows:
        # Nothing scored: the file is not a predictions file at all; one line says so.
        raise CommandError(
            f"{args.predictions}: no usable prediction in {len(scored.problems):,} line(s) "
            f"(first: {scored.problems[0]}); expected JSON lines, one object per question with "
            "'question', 'answer', 'answer_format' and 'pred'"
        )
    for problem in scored.problems[:_SHOWN_PROBLEMS]:
        print(f"{args.predictions}: {problem}", file=sys.stderr)
    if len(scored.problems) > _SHOWN_PROBLEMS:
        hidden = len(scored.problems) - _SHOWN_PROBLEMS
        print(
            f"{args.predictions}: and {hidden:,} more lines left out (--json lists them all)", file=sys.stderr
        )
    if args.json:
        print(json.dumps({"summary": scored.summary.as_dict(), "problems": list(scored.problems)}, indent=2))
    else:
        print(format_summary(scored.summary))
    return 1 if scored.problems and not scored.rows else 0
