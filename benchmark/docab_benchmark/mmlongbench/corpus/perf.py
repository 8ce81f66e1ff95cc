"""Converter throughput and its cost split: ``python -m docab_benchmark.mmlongbench.corpus.perf [PDF_DIR]``.

Measures, over every page of the PDFs in PDF_DIR (default: ../shared/data/mmlongbench-dev/documents):

1. the reference: render each page at 144 dpi and save it with Pillow's default PNG settings, one core;
2. the cost split of one page, one core: render, text, grey check, PNG encode (ours) versus
   Pillow's default PNG encode of the same pixels;
3. the full converter (text, headings, page images, figures, document.md) with 1 and N processes,
   text layer only (``--ocr never``: the speed target is for this);
4. the same with ``--ocr auto`` on N processes: pages OCR'd and the OCR cost per OCR'd page, the
   difference in CPU time between the two runs divided by the pages OCR'd.

The converter runs of 3. go twice, with the word-space repair off and on (``--no-word-spaces`` and
the default), back to back, so its cost is read from one machine state.

With ``--word-spaces``, only the word-space report: every word space the repair puts back in the
PDFs, as the two words it makes (``off but``), to read for false splits, the gap candidates the glyph geometry proposed, and
the CPU time of the text step with and without the repair (one process, no images).

With ``--compare-bindings``, also the CPU time per page of the two Tesseract bindings on the pages
``--ocr auto`` would OCR, rendered in grey at the OCR resolution: tesserocr (the one used, Tesseract
loaded once) and pytesseract (one ``tesseract`` process per page; installed with vision-bridge).

Prints pages per second, the ratio to the reference, and the CPU time per page (which other
processes on a busy machine disturb far less than wall time). Compare figures from one run.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab_benchmark.mmlongbench.corpus.textcheck import OcrMode

DEFAULT_PDFS = (
    Path(__file__).resolve().parents[4].parent / "shared" / "data" / "mmlongbench-dev" / "documents"
)


def _pages(pdfs: list[Path]) -> Iterator[Any]:
    import pypdfium2 as pdfium

    for pdf in pdfs:
        document = pdfium.PdfDocument(str(pdf))
        for index in range(len(document)):
            yield document[index]


def reference(pdfs: list[Path]) -> tuple[int, float]:
    """Render at 144 dpi and save with Pillow's default PNG settings (the issue's ~13 pages/s)."""
    count, start = 0, time.perf_counter()
    for page in _pages(pdfs):
        image = page.render(scale=2.0).to_pil()
        image.save(io.BytesIO(), format="PNG")
        count += 1
    return count, time.perf_counter() - start


def cost_split(pdfs: list[Path]) -> dict[str, float]:
    """Milliseconds per page of each step, one process. The PNG rows encode the same pixels three ways."""
    from PIL import Image

    from docab_benchmark.mmlongbench.corpus.pdfium import page_lines
    from docab_benchmark.mmlongbench.corpus.png import encode_png, lossless_grey
    from docab_benchmark.mmlongbench.corpus.textcheck import check_text

    steps = (
        "render (144 dpi)",
        "text + font sizes",
        "text check (garble test)",
        "grey check",
        "PNG: Up filter + ISA-L (used)",
        "PNG: Up filter + zlib level 1",
        "PNG: Pillow default (reference)",
    )
    totals = dict.fromkeys(steps, 0.0)
    count = 0
    for page in _pages(pdfs):
        marks = [time.perf_counter()]
        rgb = page.render(scale=2.0, rev_byteorder=True, may_draw_forms=False).to_numpy()
        marks.append(time.perf_counter())
        lines = page_lines(page)
        marks.append(time.perf_counter())
        check_text(" ".join(line.text for line in lines))
        marks.append(time.perf_counter())
        grey = lossless_grey(rgb)
        pixels = grey if grey is not None else rgb
        marks.append(time.perf_counter())
        encode_png(pixels, codec="isal")
        marks.append(time.perf_counter())
        encode_png(pixels, codec="zlib")
        marks.append(time.perf_counter())
        Image.fromarray(rgb).save(io.BytesIO(), format="PNG")
        marks.append(time.perf_counter())
        for key, start, end in zip(steps, marks[:-1], marks[1:], strict=True):
            totals[key] += end - start
        count += 1
    return {key: 1000 * value / count for key, value in totals.items()}


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def compare_bindings(pdfs: list[Path]) -> dict[str, float]:
    """CPU seconds per page of tesserocr and pytesseract on the pages auto mode would OCR (one process)."""
    import importlib

    from PIL import Image

    from docab_benchmark.mmlongbench.corpus.ocr import DEFAULT_OCR_DPI, MIN_WORD_CONFIDENCE, TesseractEngine
    from docab_benchmark.mmlongbench.corpus.pdfium import page_lines
    from docab_benchmark.mmlongbench.corpus.textcheck import check_text, ink_share, needs_ocr

    images = []
    for page in _pages(pdfs):
        check = check_text(" ".join(line.text for line in page_lines(page)))
        if check.verdict == "ok":
            continue
        grey = page.render(scale=DEFAULT_OCR_DPI / 72, grayscale=True).to_numpy().copy()
        if needs_ocr("auto", check, ink_share(grey)):
            images.append(grey)
    pytesseract: Any = importlib.import_module("pytesseract")  # untyped; a vision-bridge dependency
    engine = TesseractEngine()
    engine.recognise(
        images[0], DEFAULT_OCR_DPI, "eng", MIN_WORD_CONFIDENCE
    )  # load the model once, as a worker does
    start = _cpu()
    for grey in images:
        engine.recognise(grey, DEFAULT_OCR_DPI, "eng", MIN_WORD_CONFIDENCE)
    tesserocr_cpu = (_cpu() - start) / len(images)
    start = _cpu()
    for grey in images:
        pytesseract.image_to_data(Image.fromarray(grey), lang="eng", config=f"--dpi {int(DEFAULT_OCR_DPI)}")
    pytesseract_cpu = (_cpu() - start) / len(images)
    return {"pages": float(len(images)), "tesserocr": tesserocr_cpu, "pytesseract": pytesseract_cpu}


@dataclass(frozen=True)
class WordSpaceReport:
    """What the word-space repair did to some PDFs (``word_space_report``).

    ``restored``: (PDF name, page, the two words as written after) per space put back; ``candidates``:
    the places the glyph geometry proposed (the vocabulary rejected the rest); ``cpu_on``/``cpu_off``:
    CPU seconds of the text step (lines, styles, and the repair's measurements) with and without it.
    """

    pdfs: int
    pages: int
    candidates: int
    restored: tuple[tuple[str, int, str], ...]
    cpu_on: float
    cpu_off: float


def word_space_report(pdfs: list[Path]) -> WordSpaceReport:
    """Run the converter's text step on every page, in its chunks of pages, with the repair and without."""
    import pypdfium2 as pdfium

    from docab_benchmark.mmlongbench.corpus.model import PageContent
    from docab_benchmark.mmlongbench.corpus.pdfium import _load_page, _page_lines
    from docab_benchmark.mmlongbench.corpus.runner import CHUNK_PAGES
    from docab_benchmark.mmlongbench.corpus.wordspace import restore_word_spaces, runs_to_measure

    pages = candidates = 0
    restored: list[tuple[str, int, str]] = []
    cpu = {True: 0.0, False: 0.0}
    for pdf in pdfs:
        try:
            document = pdfium.PdfDocument(str(pdf))
        except pdfium.PdfiumError as exc:
            print(f"skipped {pdf.name}: {exc}", file=sys.stderr)
            continue
        contents: list[PageContent] = []
        for first in range(1, len(document) + 1, CHUNK_PAGES):
            loaded = [
                _load_page(document, n) for n in range(first, min(first + CHUNK_PAGES, len(document) + 1))
            ]
            chunks: dict[bool, list[PageContent]] = {}
            for word_spaces in (False, True):
                start = time.process_time()
                rare = runs_to_measure(page.text for page in loaded) if word_spaces else frozenset()
                chunks[word_spaces] = [
                    PageContent(page.number, _page_lines(page.page, page.textpage, page.text, rare), None)
                    for page in loaded
                    if page.textpage is not None
                ]
                cpu[word_spaces] += time.process_time() - start
            contents.extend(chunks[True])
            for loaded_page in loaded:
                loaded_page.close()
        document.close()
        start = time.process_time()
        repaired = restore_word_spaces(contents)
        cpu[True] += time.process_time() - start
        pages += len(contents)
        candidates += sum(len(line.gaps) for page in contents for line in page.lines)
        for content in repaired:
            restored.extend((pdf.name, content.number, words) for words in content.spaces_restored)
    return WordSpaceReport(len(pdfs), pages, candidates, tuple(restored), cpu[True], cpu[False])


def converter(
    pdfs: list[Path], jobs: int, ocr: OcrMode = "never", word_spaces: bool = True
) -> tuple[int, float, float, int, int]:
    """Pages, wall seconds, CPU seconds (this process and its workers), PNG bytes and pages OCR'd of a full conversion."""
    from docab_benchmark.mmlongbench.corpus import RenderSettings, convert_corpus, get_converter
    from docab_benchmark.mmlongbench.corpus.ocr import OcrSettings

    with tempfile.TemporaryDirectory(prefix="docab-perf-") as out:
        chosen = get_converter(
            "pypdfium2", RenderSettings(ocr=OcrSettings(mode=ocr), word_spaces=word_spaces)
        )
        for warning in chosen.preflight():
            print(f"warning: {warning}", file=sys.stderr)
        before, start = os.times(), time.perf_counter()
        report = convert_corpus(pdfs, Path(out), jobs=jobs, converter=chosen)
        elapsed, after = time.perf_counter() - start, os.times()
        size = sum(p.stat().st_size for p in Path(out).rglob("*.png"))
    if report.failed:
        raise SystemExit(f"conversion failed: {report.failed[0].error}")
    cpu = sum(
        getattr(after, f) - getattr(before, f) for f in ("user", "system", "children_user", "children_system")
    )
    return report.pages_converted, elapsed, cpu, size, report.pages_ocr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m docab_benchmark.mmlongbench.corpus.perf",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("pdfs", nargs="?", type=Path, default=DEFAULT_PDFS, help="folder of PDFs")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes for the parallel run"
    )
    parser.add_argument("--skip-reference", action="store_true", help="skip the slow Pillow reference")
    parser.add_argument("--skip-ocr", action="store_true", help="skip the --ocr auto run")
    parser.add_argument(
        "--word-spaces",
        action="store_true",
        help="only the word-space report: every space the repair puts back, as the two words it makes",
    )
    parser.add_argument(
        "--compare-bindings",
        action="store_true",
        help="also time tesserocr against pytesseract per OCR'd page",
    )
    args = parser.parse_args(argv)
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if not pdfs:
        print(f"no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    print(f"{len(pdfs)} PDFs in {args.pdfs}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    if args.word_spaces:
        report = word_space_report(pdfs)
        for name, number, words in report.restored:
            print(f"  {name} p{number}: {words}")
        pages = max(report.pages, 1)
        print(
            f"word spaces: {report.pages} pages, {report.candidates} gap candidates from the glyphs, "
            f"{len(report.restored)} spaces restored; text step {1000 * report.cpu_off / pages:.2f} CPU-ms/page "
            f"without the repair, {1000 * report.cpu_on / pages:.2f} with it (1 process)"
        )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return 0
    ref_rate = None
    if not args.skip_reference:
        pages, elapsed = reference(pdfs)
        ref_rate = pages / elapsed
        print(
            f"reference  (render 144 dpi + Pillow PNG, 1 process): {pages} pages, {elapsed:6.1f} s, {ref_rate:5.1f} pages/s"
        )
    print("cost split per page, 1 process (ms):")
    for key, value in cost_split(pdfs).items():
        print(f"  {key:34s} {value:6.1f}")
    text_cpu = 0.0
    for jobs in sorted({1, args.jobs}):
        for word_spaces in (False, True):
            pages, elapsed, cpu, size, _ = converter(pdfs, jobs, word_spaces=word_spaces)
            text_cpu = cpu
            rate = pages / elapsed
            ratio = f", {rate / ref_rate:4.2f}x reference" if ref_rate else ""
            flag = "" if word_spaces else " --no-word-spaces"
            print(
                f"docab convert --ocr never{flag}, {jobs} process(es): {pages} pages, {elapsed:6.1f} s, "
                f"{rate:5.1f} pages/s{ratio}; CPU {1000 * cpu / pages:.1f} ms/page "
                f"({pages / cpu:.1f} pages per CPU-second); PNG {size / pages / 1024:.0f} KiB/page"
            )
    if not args.skip_ocr:
        pages, elapsed, cpu, _, ocr_pages = converter(pdfs, args.jobs, "auto")
        cost = f"; OCR {(cpu - text_cpu) / ocr_pages:.2f} CPU-s per OCR'd page" if ocr_pages else ""
        print(
            f"docab convert --ocr auto, {args.jobs} process(es): {pages} pages, {elapsed:6.1f} s, "
            f"{pages / elapsed:5.1f} pages/s; {ocr_pages} pages OCR'd; CPU {cpu:.1f} s{cost}"
        )
    if args.compare_bindings:
        result = compare_bindings(pdfs)
        print(
            f"Tesseract bindings, {int(result['pages'])} pages auto mode OCRs, 1 process: tesserocr "
            f"{result['tesserocr']:.2f} CPU-s/page, pytesseract {result['pytesseract']:.2f} CPU-s/page "
            "(including its tesseract processes)"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
