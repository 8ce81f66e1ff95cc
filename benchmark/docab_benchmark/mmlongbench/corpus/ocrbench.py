"""How much of a page's text OCR gets back: ``python -m docab_benchmark.mmlongbench.corpus.ocrbench PDF_DIR``.

Scanned slide decks (a deck exported as one picture per slide) hold a quarter of MMLongBench-Doc's
questions, and there is no ground truth for what is written on them. Decks that kept their text
layer give one: each sampled page is rendered as such an export would be (1024-1440 pixels wide,
JPEG at quality 70 or 85), scaled to the OCR resolution as PDFium scales a page image, OCR'd, and
compared with the page's own PDF text.

Reported per OCR setting (``--passes``) and per half of the decks (``tune``/``test``, by a hash of
the path under PDF_DIR, so a deck never straddles the halves):

- **recall**: the share of the PDF text's distinct tokens (two characters or more, or a digit,
  after ``findability.normalise``) that the OCR text holds;
- **numbers**: the same over tokens with a digit (figures are what questions ask for);
- **precision**: the share of the OCR text's distinct tokens that are in the PDF text (noise);
- **CPU**: seconds of recognition per page, one process.

The PDF text is an imperfect truth (speaker-hidden text, text under pictures and off-slide text
count as missed), which lowers every setting alike; compare settings, not absolute values. Choose
settings on ``tune`` and read ``test`` once.
"""

from __future__ import annotations

import argparse
import io
import random
import re
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from docab_benchmark.mmlongbench.corpus.ocr import (
    DEFAULT_OCR_DPI,
    MIN_WORD_CONFIDENCE,
    TesseractEngine,
    Thresholding,
    parse_passes,
)
from docab_benchmark.mmlongbench.findability import normalise

Half = Literal["tune", "test"]
EXPORT_WIDTHS: Final = (1024, 1280, 1440)
JPEG_QUALITIES: Final = (70, 85)
MIN_TEXT_CHARS: Final = 40  # letters and digits a page's PDF text needs to be a useful truth
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class SampledPage:
    """A page's PDF text and the JPEG picture of it that stands in for a scan."""

    pdf: str
    page: int
    width_pt: float
    height_pt: float
    text: str
    jpeg: bytes

    @property
    def half(self) -> Half:
        return half_of(self.pdf)


@dataclass(frozen=True)
class Recall:
    """Token counts of one OCR setting over some pages (see the module docstring)."""

    pages: int = 0
    truth: int = 0
    found: int = 0
    numbers: int = 0
    numbers_found: int = 0
    ocr_tokens: int = 0
    ocr_true: int = 0
    cpu: float = 0.0

    def add(self, truth_text: str, ocr_text: str, cpu: float) -> Recall:
        truth, read = tokens(truth_text), tokens(ocr_text)
        numbers = {token for token in truth if _DIGIT.search(token)}
        return Recall(
            self.pages + 1,
            self.truth + len(truth),
            self.found + len(truth & read),
            self.numbers + len(numbers),
            self.numbers_found + len(numbers & read),
            self.ocr_tokens + len(read),
            self.ocr_true + len(read & truth),
            self.cpu + cpu,
        )

    def row(self, label: str) -> str:
        def share(part: int, whole: int) -> str:
            return f"{part / whole:.3f} ({part}/{whole})" if whole else "n/a"

        cpu = self.cpu / self.pages if self.pages else 0.0
        return (
            f"{label:24s} {share(self.found, self.truth):>22s} {share(self.numbers_found, self.numbers):>18s} "
            f"{share(self.ocr_true, self.ocr_tokens):>22s} {cpu:8.2f}"
        )


def tokens(text: str) -> set[str]:
    """The distinct tokens of ``text`` that count (pure): normalised, two characters or a digit."""
    return {token for token in normalise(text).split() if len(token) >= 2 or token.isdigit()}


def half_of(name: str) -> Half:
    """``tune`` or ``test`` for a PDF, by a CRC-32 of its path under PDF_DIR: stable across machines and runs."""
    return "tune" if zlib.crc32(name.encode()) % 2 == 0 else "test"


def sample_pages(root: Path, pdfs: Sequence[Path], per_document: int, seed: int) -> list[SampledPage]:
    """Up to ``per_document`` random pages per PDF whose text layer has ``MIN_TEXT_CHARS`` letters and
    digits; each is named by its path under ``root``."""
    import pypdfium2 as pdfium

    rng = random.Random(seed)
    samples: list[SampledPage] = []
    for pdf in pdfs:
        try:
            document = pdfium.PdfDocument(str(pdf))
        except (pdfium.PdfiumError, OSError) as exc:
            print(f"ocrbench: skipped {pdf.name}: {exc}", file=sys.stderr)
            continue
        order = list(range(len(document)))
        rng.shuffle(order)
        taken = 0
        for index in order:
            if taken == per_document:
                break
            try:
                page = document[index]
                text = page.get_textpage().get_text_range()
                if sum(char.isalnum() for char in text) < MIN_TEXT_CHARS:
                    continue
                width, height = page.get_size()
                scale = rng.choice(EXPORT_WIDTHS) / width
                picture = page.render(scale=scale).to_pil().convert("RGB")
            except (pdfium.PdfiumError, OSError, ValueError) as exc:  # one bad page, not the whole run
                print(f"ocrbench: skipped {pdf.name} page {index + 1}: {exc}", file=sys.stderr)
                continue
            buffer = io.BytesIO()
            picture.save(buffer, format="JPEG", quality=rng.choice(JPEG_QUALITIES))
            samples.append(
                SampledPage(
                    pdf.relative_to(root).as_posix(), index + 1, width, height, text, buffer.getvalue()
                )
            )
            taken += 1
        document.close()
    return samples


def recognise(page: SampledPage, passes: tuple[Thresholding, ...], dpi: float) -> tuple[str, float]:
    """OCR ``page``'s picture scaled to ``dpi`` as docab's converter would: its text and CPU seconds."""
    import numpy as np
    from PIL import Image

    picture = Image.open(io.BytesIO(page.jpeg)).convert("L")
    size = (round(page.width_pt / 72 * dpi), round(page.height_pt / 72 * dpi))
    pixels = np.asarray(picture.resize(size, Image.Resampling.BILINEAR))
    engine = TesseractEngine(passes=passes)
    start = time.process_time()
    found = engine.recognise(pixels, dpi, "eng", MIN_WORD_CONFIDENCE)
    text = "\n".join(line for paragraph in found.paragraphs for line in paragraph)
    return text, time.process_time() - start


def _recognise(job: tuple[SampledPage, tuple[Thresholding, ...], float]) -> tuple[str, float]:
    return recognise(*job)


def measure(
    samples: Sequence[SampledPage], settings: Iterable[tuple[Thresholding, ...]], dpi: float, jobs: int
) -> dict[tuple[tuple[Thresholding, ...], Half], Recall]:
    """Every setting over every sample, tallied per half."""
    results: dict[tuple[tuple[Thresholding, ...], Half], Recall] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for passes in settings:
            outputs = pool.map(_recognise, [(page, passes, dpi) for page in samples], chunksize=4)
            for page, (text, cpu) in zip(samples, outputs, strict=True):
                key = (passes, page.half)
                results[key] = results.get(key, Recall()).add(page.text, text, cpu)
    return results


def format_results(results: dict[tuple[tuple[Thresholding, ...], Half], Recall]) -> str:
    settings = list(dict.fromkeys(passes for passes, _ in results))
    lines = []
    for half in ("tune", "test"):
        pages = next((r.pages for (_, h), r in results.items() if h == half), 0)
        lines.append(f"{half} half: {pages} pages")
        lines.append(f"{'passes':24s} {'recall':>22s} {'numbers':>18s} {'precision':>22s} {'CPU s/page':>8s}")
        for passes in settings:
            lines.append(results.get((passes, half), Recall()).row("+".join(passes)))
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m docab_benchmark.mmlongbench.corpus.ocrbench",
        description="How much of a page's text docab's OCR gets back. Samples pages of PDFs that have a "
        "text layer, renders each as a picture-only export would be (1024-1440 px wide, JPEG), OCRs it "
        "as docab convert would, and compares its tokens with the page's own PDF text. The PDFs are split "
        "into a tune and a test half by a hash of their path: choose settings on tune, read test once.",
        epilog="columns: recall = share of the PDF text's distinct tokens the OCR text holds; numbers = "
        "the same for tokens with a digit; precision = share of the OCR tokens that are in the PDF text; "
        "CPU s/page = recognition time per page in one process. Example: python -m "
        "docab_benchmark.mmlongbench.corpus.ocrbench decks/ --passes otsu,otsu+sauvola --dpi 150",
    )
    parser.add_argument(
        "pdf_dir",
        type=Path,
        metavar="PDF_DIR",
        help="folder of PDFs with a text layer (searched recursively)",
    )
    parser.add_argument(
        "--passes",
        default="otsu,otsu+sauvola",
        help="comma-separated OCR settings to compare, each as for docab convert --ocr-passes "
        "(default otsu,otsu+sauvola)",
    )
    parser.add_argument("--per-document", type=int, default=5, help="pages sampled per PDF (default 5)")
    parser.add_argument("--seed", type=int, default=7, help="sampling seed (default 7)")
    parser.add_argument("--dpi", type=float, default=DEFAULT_OCR_DPI, help="OCR resolution (default 200)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args(argv)
    try:
        settings = [parse_passes(part) for part in args.passes.split(",")]
    except ValueError as exc:
        parser.error(f"--passes {exc}")
    if args.per_document < 1 or args.jobs < 1:
        parser.error("--per-document and --jobs must be at least 1")
    if not args.pdf_dir.is_dir():
        parser.error(f"{args.pdf_dir} is not a folder: give a folder of PDFs with a text layer")
    pdfs = sorted(
        path for path in args.pdf_dir.rglob("*") if path.suffix.lower() == ".pdf" and path.is_file()
    )
    if not pdfs:
        parser.error(f"no PDF under {args.pdf_dir}")
    samples = sample_pages(args.pdf_dir, pdfs, args.per_document, args.seed)
    print(f"{len(pdfs)} PDFs, {len(samples)} pages sampled; OCR at {args.dpi:g} dpi, {args.jobs} processes")
    print(format_results(measure(samples, settings, args.dpi, args.jobs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
