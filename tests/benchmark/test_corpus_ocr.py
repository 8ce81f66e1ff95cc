"""OCR where the text layer fails: the garble test, the OCR decision, Tesseract on tiny generated pages,
a missing engine (injected, no monkeypatching), --ocr never and always, resume, and structure kept."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import matplotlib
import numpy as np
import pytest
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

from docab_benchmark.mmlongbench.corpus import RenderSettings, convert_corpus, get_converter
from docab_benchmark.mmlongbench.corpus.ocr import (
    EngineInfo,
    OcrParagraph,
    OcrSettings,
    OcrUnavailable,
    OcrWord,
    RecognisedText,
    TesseractEngine,
    find_tessdata,
    merge_passes,
    parse_passes,
)
from docab_benchmark.mmlongbench.corpus.pdfium import engine_status
from docab_benchmark.mmlongbench.corpus.textcheck import (
    INK_MIN,
    TextCheck,
    check_text,
    ink_share,
    needs_ocr,
)

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
BODY = [
    "The directors report that revenue grew by eleven percent in the year under review, while the",
    "operating costs of the group fell for the third year running and the board proposes a dividend.",
]


# --- the garble test and the OCR decision (pure) ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("", "empty"),
        ("   \n ● ", "empty"),
        ("Case 1:18-cv-01234 Document 12 Filed 01/01/18 Page 3 of 20", "sparse"),
        (" ".join(BODY), "ok"),
        ("! \"   #$%& ' ()*+ ,-./ 0!\" #$%&' ()*+,-./ !\"#$ %&'( )*+, -./! \"#$% &'() *+,- ./", "garbled"),
        ("(cid:5)(cid:6)(cid:7) (cid:8)(cid:9) " * 6, "garbled"),
        ("g3g4g5 g6g7 g8g9g10 g11g12 " * 6, "garbled"),
        ("\ue001\ue002\ue003 \ue004\ue005\ue006 " * 10, "garbled"),
        ("Coursework Requirements ............ 3\n" * 6 + "Grading ............ 7\n" * 6, "ok"),
        ("The U.S. economy's e-mail 18.29% $1,000 iPhone (2019) well-known results: " * 3, "ok"),
    ],
)
def test_garble_detector(text: str, verdict: str) -> None:
    assert check_text(text).verdict == verdict


def test_ocr_decision_follows_mode_verdict_and_ink() -> None:
    ok, sparse, garbled = (
        TextCheck("ok", 900, 0.9),
        TextCheck("sparse", 20, 1.0),
        TextCheck("garbled", 300, 0.1),
    )
    assert needs_ocr("never", garbled, 1.0) is None
    assert needs_ocr("always", ok, 0.0) == "always"
    assert needs_ocr("auto", ok, 1.0) is None
    assert needs_ocr("auto", garbled, 0.0) == "garbled"
    assert needs_ocr("auto", sparse, INK_MIN) == "sparse"
    assert needs_ocr("auto", sparse, INK_MIN / 2) is None  # a blank or title-only page: nothing to read
    blank = np.full((40, 40, 3), 255, dtype=np.uint8)
    assert ink_share(blank) == 0.0
    blank[:20] = (200, 0, 0)  # saturated colour on white is ink
    assert ink_share(blank) == pytest.approx(0.5)


# --- generated PDFs --------------------------------------------------------------------------------


def _text_image(lines: list[str], size: int = 28) -> Image.Image:
    font = ImageFont.truetype(str(FONT), size)
    image = Image.new("L", (1500, 60 + 48 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((30, 30 + 48 * index), line, font=font, fill=0)
    return image


def image_only_pdf(path: Path, lines: list[str]) -> Path:
    """A page holding only a picture of text: no text layer at all."""
    pdf = FPDF(unit="pt", format=(560, 120))
    pdf.add_page()
    pdf.image(_text_image(lines), x=0, y=0, w=560)
    path.write_bytes(bytes(pdf.output()))
    return path


def garbled_font_pdf(path: Path) -> Path:
    """A page whose glyphs show the right words but whose ToUnicode map sends every glyph to a symbol.

    The broken-encoding case: PDFium extracts ``! "#$%&'...`` (symbol soup) while the page looks right.
    """
    pdf = FPDF(unit="pt", format=(560, 90))
    pdf.compress = False
    pdf.add_page()
    pdf.add_font("dejavu", fname=str(FONT))
    pdf.set_font("dejavu", size=11)
    for index, line in enumerate(BODY):
        pdf.text(12, 30 + 20 * index, line)
    data = bytes(pdf.output())
    start, end = data.index(b"beginbfchar"), data.index(b"endbfchar")
    cmap = data[start:end]

    def to_symbol(match: re.Match[bytes]) -> bytes:
        code = int(match.group(1), 16)
        return b"<%s> <%04X>" % (match.group(1), 0x21 + code % 15)  # ! " # $ % & ' ( ) * + , - . /

    broken = re.sub(rb"<([0-9A-F]{4})> <(?!0020)[0-9A-F]{4}>", to_symbol, cmap)
    assert len(broken) == len(cmap)  # same length: the xref offsets stay right
    path.write_bytes(data[:start] + broken + data[end:])
    return path


def list_pdf(path: Path) -> Path:
    """Body text with one list item whose second line is set in a larger font."""
    pdf = FPDF(unit="pt", format=(500, 400))
    pdf.add_page()
    pdf.add_font("dejavu", fname=str(FONT))
    y = 40.0
    for line in ("• Computerized", "Physician Order Entry", "• Electronic Health Records"):
        pdf.set_font("dejavu", size=14 if line == "Physician Order Entry" else 10)
        pdf.text(40, y, line)
        y += 14
    pdf.set_font("dejavu", size=10)
    for index in range(12):
        pdf.text(40, y + 20 + 13 * index, f"Plain body text line {index} keeps the body size at ten points.")
    path.write_bytes(bytes(pdf.output()))
    return path


@dataclass(frozen=True)
class FakeEngine:
    """An OCR engine that recognises fixed text, or is missing (``unavailable`` says why)."""

    text: tuple[tuple[str, ...], ...] = (("Recognised line one", "# not a heading"),)
    unavailable: str = ""

    def identify(self, languages: str) -> EngineInfo:
        if self.unavailable:
            raise OcrUnavailable(self.unavailable)
        return EngineInfo("fake", "1.0")

    def recognise(
        self, pixels: np.ndarray, dpi: float, languages: str, min_confidence: float
    ) -> RecognisedText:
        assert pixels.dtype == np.uint8 and pixels.ndim in (2, 3)
        return RecognisedText(self.text, sum(len(line.split()) for p in self.text for line in p), 88.0)


def _converter(mode: str = "auto", engine: object | None = None, dpi: float = 200.0):
    ocr = (
        OcrSettings(mode=mode, dpi=dpi) if engine is None else OcrSettings(mode=mode, dpi=dpi, engine=engine)
    )  # type: ignore[arg-type]
    return get_converter("pypdfium2", RenderSettings(figures=False, ocr=ocr))


def _convert(pdf: Path, out: Path, converter) -> tuple[str, dict]:
    report = convert_corpus(pdf, out, jobs=1, converter=converter)
    assert not report.failed, report.failed
    folder = out / pdf.stem
    return (folder / "document.md").read_text(), json.loads((folder / "meta.json").read_text())


def _tesseract() -> TesseractEngine:
    engine = TesseractEngine()
    status = engine_status(engine, "eng")
    if not isinstance(status, EngineInfo):  # CI installs tesseract-ocr-eng (.ci/run): this runs there
        pytest.skip(f"Tesseract is not usable here: {status}")
    return engine


def test_image_only_page_is_read_by_tesseract_and_marked(tmp_path: Path) -> None:
    engine = _tesseract()
    pdf = image_only_pdf(tmp_path / "scan.pdf", ["Quarterly revenue reached 4,210 million"])
    markdown, meta = _convert(pdf, tmp_path / "out", _converter("auto", engine))
    page = meta["pages"][0]
    assert page["text_source"] == "ocr" and page["text_check"]["verdict"] == "empty"
    ocr = page["ocr"]
    assert ocr["engine"] == "tesseract" and re.match(r"5\.\d+\.\d+ \(tesserocr ", ocr["version"])
    assert ocr["reason"] == "empty" and ocr["dpi"] == 200.0 and ocr["languages"] == "eng"
    assert ocr["confidence"] > 60 and ocr["words"] >= 4
    assert "revenue reached 4,210 million" in markdown
    note = next(line for line in markdown.splitlines() if line.startswith("_OCR text"))
    assert note.startswith("_OCR text (tesseract 5.") and "recognised from the page image" in note
    assert markdown.index(note) < markdown.index("revenue reached")
    assert meta["settings"]["ocr"]["engine"].startswith("tesseract 5.")


def test_garbled_font_encoding_is_replaced_by_ocr(tmp_path: Path) -> None:
    pdf = garbled_font_pdf(tmp_path / "directors.pdf")
    never, meta_never = _convert(pdf, tmp_path / "never", _converter("never"))
    assert meta_never["pages"][0]["text_check"]["verdict"] == "garbled"  # the symbol soup is seen
    assert "directors" not in never and meta_never["pages"][0]["ocr"] is None
    engine = _tesseract()
    markdown, meta = _convert(pdf, tmp_path / "auto", _converter("auto", engine))
    page = meta["pages"][0]
    assert page["text_source"] == "ocr" and page["ocr"]["reason"] == "garbled"
    assert "directors report that revenue grew by eleven percent" in markdown
    assert "#$%" not in markdown  # the garbled PDF text is dropped, not kept beside the OCR text


def test_missing_engine_is_one_warning_and_pdf_text_is_kept(tmp_path: Path) -> None:
    pdf = list_pdf(tmp_path / "listed.pdf")
    scan = image_only_pdf(tmp_path / "scan.pdf", ["Only an image"])
    missing = FakeEngine(unavailable="no Tesseract language data for 'eng'; install tesseract-ocr-eng")
    converter = _converter("auto", missing)
    report = convert_corpus([pdf, scan], tmp_path / "out", jobs=1, converter=converter)
    assert report.warnings == (
        "OCR is unavailable, so pages keep their PDF text: no Tesseract language data for 'eng'; "
        "install tesseract-ocr-eng",
    )
    assert not report.failed and report.pages_ocr == 0
    meta = json.loads((tmp_path / "out" / "scan" / "meta.json").read_text())
    assert meta["pages"][0]["text_source"] == "pdf" and meta["pages"][0]["ocr"] is None
    assert meta["settings"]["ocr"]["engine"] == "unavailable"  # redone once the engine is installed
    assert "Physician Order Entry" in (tmp_path / "out" / "listed" / "document.md").read_text()
    # the engine appears: the same command converts the documents again
    again = convert_corpus([pdf, scan], tmp_path / "out", jobs=1, converter=_converter("auto", FakeEngine()))
    assert len(again.converted) == 2 and again.pages_ocr == 1


def test_ocr_never_always_and_resume(tmp_path: Path) -> None:
    scan = image_only_pdf(tmp_path / "scan.pdf", ["Only an image"])
    text = list_pdf(tmp_path / "listed.pdf")
    out = tmp_path / "out"
    never = _converter("never", FakeEngine())
    report = convert_corpus([scan, text], out, jobs=1, converter=never)
    assert report.pages_ocr == 0 and not report.warnings
    scan_md = (out / "scan" / "document.md").read_text()
    assert "_No text layer on this page: see the page image._" in scan_md and "OCR" not in scan_md
    meta = json.loads((out / "scan" / "meta.json").read_text())
    assert meta["settings"]["ocr"] == {"mode": "never"} and meta["pages"][0]["ocr"] is None
    # auto: the image-only page is OCR'd, the text page is not; the fake's text is escaped
    auto = convert_corpus([scan, text], out, jobs=1, converter=_converter("auto", FakeEngine()))
    assert len(auto.converted) == 2 and auto.pages_ocr == 1
    scan_md = (out / "scan" / "document.md").read_text()
    assert "Recognised line one\n\\# not a heading" in scan_md
    assert json.loads((out / "listed" / "meta.json").read_text())["pages"][0]["text_source"] == "pdf"
    # resumed: same settings, nothing to do
    assert (
        len(convert_corpus([scan, text], out, jobs=1, converter=_converter("auto", FakeEngine())).skipped)
        == 2
    )
    # always: every page's text comes from OCR, the PDF text is replaced
    always = convert_corpus([scan, text], out, jobs=1, converter=_converter("always", FakeEngine()))
    assert always.pages_ocr == 2
    listed = (out / "listed" / "document.md").read_text()
    assert "Physician Order Entry" not in listed and "Recognised line one" in listed
    page = json.loads((out / "listed" / "meta.json").read_text())["pages"][0]
    assert page["text_source"] == "ocr" and page["ocr"]["reason"] == "always"
    assert page["ocr"]["engine"] == "fake" and page["ocr"]["confidence"] == 88.0


def test_sparse_page_keeps_its_pdf_text_and_adds_ocr(tmp_path: Path) -> None:
    pdf = FPDF(unit="pt", format=(560, 160))
    pdf.add_page()
    pdf.set_font("Helvetica", size=9)
    pdf.text(10, 12, "Case 1:18-cv-01234 Document 12")
    pdf.image(_text_image(["A scanned filing under a header line"]), x=0, y=20, w=560)
    path = tmp_path / "filing.pdf"
    path.write_bytes(bytes(pdf.output()))
    markdown, meta = _convert(path, tmp_path / "out", _converter("auto", FakeEngine()))
    page = meta["pages"][0]
    assert page["text_source"] == "pdf+ocr" and page["ocr"]["reason"] == "sparse"
    assert (
        markdown.index("Case 1:18-cv-01234")
        < markdown.index("_OCR text (fake 1.0")
        < markdown.index("Recognised line one")
    )


def test_large_font_word_in_a_list_is_not_a_heading(tmp_path: Path) -> None:
    markdown, _ = _convert(list_pdf(tmp_path / "listed.pdf"), tmp_path / "out", _converter("never"))
    assert "#### Physician" not in markdown and "### Physician" not in markdown
    assert "• Computerized\nPhysician Order Entry\n• Electronic Health Records" in markdown


def test_file_name_title_never_reaches_the_document(tmp_path: Path) -> None:
    pdf = FPDF(unit="pt", format=(400, 200))
    pdf.set_title("PP_2019.01.17_Trump-economy_FINAL2")
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    for index in range(8):
        pdf.text(20, 40 + 14 * index, f"Body line {index} of a report about the economy and the public.")
    path = tmp_path / "PP_2019.01.17_Trump-economy_FINAL2.pdf"
    path.write_bytes(bytes(pdf.output()))
    report = convert_corpus(path, tmp_path / "out", jobs=1, converter=_converter("never"))
    folder = tmp_path / "out" / report.results[0].name
    markdown = (folder / "document.md").read_text()
    assert (
        markdown.startswith("# Document\n") and "Trump-economy" not in markdown and "FINAL2" not in markdown
    )
    assert json.loads((folder / "meta.json").read_text())["title"] == "Document"


def test_tessdata_is_found_or_the_message_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "eng.traineddata").write_bytes(b"x")
    assert find_tessdata("eng", {"TESSDATA_PREFIX": str(tmp_path)}) == tmp_path
    with pytest.raises(OcrUnavailable, match=r"apt-get install tesseract-ocr-qqq"):
        find_tessdata("qqq", {"TESSDATA_PREFIX": str(tmp_path)})
    assert isinstance(engine_status(TesseractEngine(tessdata=str(tmp_path)), "qqq"), str)


# ---------------------------------------------------------------- two thresholding passes


def _word(text: str, left: int, top: int, right: int, bottom: int) -> OcrWord:
    return OcrWord(text, 90.0, (left, top, right, bottom))


def _texts(paragraphs: tuple[OcrParagraph, ...]) -> list[list[str]]:
    return [[" ".join(word.text for word in line) for line in paragraph] for paragraph in paragraphs]


def test_merge_keeps_the_first_pass_and_drops_words_read_again() -> None:
    first = (((_word("Revenue", 10, 10, 100, 30), _word("grew", 110, 10, 160, 30)),),)
    again = (((_word("Revenue", 12, 11, 99, 31), _word("grew", 111, 10, 161, 29)),),)
    assert _texts(merge_passes(first, again)) == [["Revenue grew"]]
    assert merge_passes(first, ()) == first
    assert _texts(merge_passes((), again)) == [["Revenue grew"]]


def test_merge_puts_a_new_word_on_its_row_in_reading_order() -> None:
    first = (((_word("Revenue", 10, 10, 100, 30), _word("million", 220, 10, 300, 30)),),)
    second = (((_word("Revenue", 10, 10, 100, 30), _word("4,210", 120, 12, 200, 31)),),)
    assert _texts(merge_passes(first, second)) == [["Revenue 4,210 million"]]


def test_merge_appends_lines_the_first_pass_did_not_see() -> None:
    first = (((_word("Title", 10, 10, 80, 30),),),)
    second = (
        ((_word("Title", 10, 10, 80, 30),),),
        (
            (_word("Shaded", 10, 200, 90, 220), _word("band", 100, 200, 150, 220)),
            (_word("7,315", 10, 240, 70, 260),),
        ),
    )
    assert _texts(merge_passes(first, second)) == [["Title"], ["Shaded band", "7,315"]]
    far = (((_word("Footnote", 900, 12, 990, 30),),),)  # same height, but far beyond the line's end
    assert _texts(merge_passes(first, far)) == [["Title"], ["Footnote"]]


def test_parse_passes_accepts_the_thresholdings_and_names_them_on_error() -> None:
    assert parse_passes("otsu+sauvola") == ("otsu", "sauvola")
    assert parse_passes("Otsu") == ("otsu",)
    for bad in ("", "otsu+otsu", "binary", "otsu+"):
        with pytest.raises(ValueError, match="otsu\\+sauvola"):
            parse_passes(bad)


def shaded_pdf(path: Path) -> Path:
    """An image-only page: a black line on white, and a line on a dark grey band (a coloured slide box).

    One global (Otsu) threshold turns the whole band black and loses its text; a local (Sauvola)
    threshold keeps it.
    """
    image = Image.new("L", (1400, 500), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(FONT), 40)
    draw.text((40, 40), "Quarterly revenue reached 4,210 million", font=font, fill=0)
    draw.rectangle((0, 200, 1400, 500), fill=90)
    draw.text((40, 260), "Shaded band keeps 7,315 units", font=font, fill=20)
    pdf = FPDF(unit="pt", format=(504, 180))  # 1400 px over 7 inches: 200 dpi
    pdf.add_page()
    pdf.image(image, x=0, y=0, w=504)
    path.write_bytes(bytes(pdf.output()))
    return path


def test_second_pass_reads_text_on_a_shaded_band_that_one_threshold_loses(tmp_path: Path) -> None:
    _tesseract()
    pdf = shaded_pdf(tmp_path / "slide.pdf")
    one_pass = TesseractEngine(passes=("otsu",))
    markdown, meta = _convert(pdf, tmp_path / "one", _converter("auto", one_pass))
    assert "revenue reached 4,210 million" in markdown and "7,315" not in markdown
    assert meta["pages"][0]["ocr"]["method"] == "otsu"
    markdown, meta = _convert(pdf, tmp_path / "two", _converter("auto", TesseractEngine()))
    assert "revenue reached 4,210 million" in markdown and "Shaded band keeps 7,315 units" in markdown
    assert markdown.count("4,210") == 1  # the line both passes read is kept once
    assert meta["pages"][0]["ocr"]["method"] == "otsu+sauvola"
    assert meta["settings"]["ocr"]["method"] == "otsu+sauvola"


def test_merge_puts_a_new_word_on_the_row_it_sits_on_not_a_taller_neighbour() -> None:
    # a big title and, beside it, a small caption whose number the first pass lost: the number's box
    # lies inside the title's height too, but it sits on the caption's row
    first = (
        ((_word("Results", 10, 0, 300, 100),),),
        ((_word("units", 400, 40, 460, 60), _word("sold", 470, 40, 520, 60)),),
    )
    second = (((_word("7,315", 330, 40, 390, 60),),),)
    assert _texts(merge_passes(first, second)) == [["Results"], ["7,315 units sold"]]
    # two columns on one row: a word goes to the nearer one
    first = (
        ((_word("Revenue", 10, 10, 100, 30), _word("grew", 110, 10, 160, 30)),),
        ((_word("Costs", 300, 10, 360, 30),),),
    )
    second = (((_word("fell", 370, 10, 400, 30),),),)
    assert _texts(merge_passes(first, second)) == [["Revenue grew"], ["Costs fell"]]


def test_merge_keeps_a_new_line_whole_when_its_end_reaches_a_row() -> None:
    # the second pass read a whole line the first lost, ending beside a word the first read: the line
    # is not torn apart (its tail on the row, its head appended at the end of the page)
    first = (((_word("units", 600, 10, 660, 30),),), ((_word("Footer", 10, 400, 90, 420),),))
    second = (
        (
            (
                _word("Shaded", 10, 10, 90, 30),
                _word("band", 100, 10, 150, 30),
                _word("keeps", 160, 10, 220, 30),
                _word("7,315", 540, 10, 590, 30),
            ),
        ),
    )
    merged = _texts(merge_passes(first, second))
    assert merged == [["Shaded band keeps 7,315 units"], ["Footer"]] or merged == [
        ["units"],
        ["Footer"],
        ["Shaded band keeps 7,315"],
    ]
    assert sum(text.count("7,315") for paragraph in merged for text in paragraph) == 1


def test_merge_drops_a_zero_size_box_inside_a_first_pass_word() -> None:
    first = (((_word("Revenue", 10, 10, 100, 30),),),)
    for box in ((50, 15, 50, 25), (40, 20, 60, 20), (50, 20, 50, 20)):
        second = (((OcrWord("Revenue", 90.0, box),),),)
        assert _texts(merge_passes(first, second)) == [["Revenue"]], box


def test_merge_tolerates_empty_lines() -> None:
    first = (((), (_word("Title", 10, 10, 80, 30),)),)
    second = (((_word("Sub", 90, 10, 130, 30),),),)
    assert _texts(merge_passes(first, second)) == [["", "Title Sub"]]


def test_merge_of_a_dense_page_keeps_each_word_once() -> None:
    # 5,000 words: the boxes are looked up in a grid (this took seconds when every word was compared
    # with every word); the second pass reads the same words a pixel off, and 500 the first lost
    def page(shift: int, lost: int) -> tuple[OcrParagraph, ...]:
        lines = tuple(
            tuple(
                _word(
                    f"w{row}.{col}",
                    20 + 60 * col + shift,
                    20 + 14 * row + shift,
                    70 + 60 * col,
                    30 + 14 * row,
                )
                for col in range(10)
                if (row * 10 + col) % 10 != lost
            )
            for row in range(500)
        )
        return tuple(lines[start : start + 5] for start in range(0, 500, 5))

    merged = merge_passes(page(0, 3), page(1, -1))
    words = [word.text for paragraph in merged for line in paragraph for word in line]
    assert len(words) == 5000 and len(set(words)) == 5000
    assert _texts(merged)[0][0] == " ".join(f"w0.{col}" for col in range(10))


def test_confidence_counts_the_words_the_second_pass_added(tmp_path: Path) -> None:
    # white above a dark band: one threshold reads nothing, the second pass reads the text;
    # the note's "mean word confidence" describes that text, not 0 % from the empty first pass
    engine = _tesseract()
    image = Image.new("L", (1400, 500), 255)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 200, 1400, 500), fill=90)
    draw.text((40, 260), "Shaded band keeps 7,315 units", font=ImageFont.truetype(str(FONT), 40), fill=20)
    pixels = np.asarray(image)
    assert TesseractEngine(passes=("otsu",)).recognise(pixels, 200.0, "eng", 30.0).words == 0
    found = engine.recognise(pixels, 200.0, "eng", 30.0)
    assert found.words >= 4 and found.confidence > 50, found


class _OldTesseract:
    """A tesserocr binding to a Tesseract without ``thresholding_method`` (4.x): it reads with Otsu only."""

    __version__ = "2.6.0"
    ended: ClassVar[list[str]] = []

    @staticmethod
    def tesseract_version() -> str:
        return "tesseract 4.1.1\n leptonica-1.79.0"

    class PyTessBaseAPI:
        def __init__(self, path: str = "", lang: str = "eng", init: bool = True) -> None:
            self.lang = lang

        def SetVariable(self, name: str, value: str) -> bool:
            return name != "thresholding_method"

        def End(self) -> None:
            _OldTesseract.ended.append(self.lang)


def test_a_tesseract_without_local_thresholding_is_found_before_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "eng.traineddata").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "tesserocr", _OldTesseract)  # the binding is imported by name
    with pytest.raises(OcrUnavailable, match=r"sauvola thresholding.*5\.0 or newer.*--ocr-passes otsu"):
        TesseractEngine(tessdata=str(tmp_path)).identify("eng")
    # one Otsu pass is what such a Tesseract always did: it still runs
    assert TesseractEngine(tessdata=str(tmp_path), passes=("otsu",)).identify("eng").method == "otsu"
    with pytest.raises(OcrUnavailable, match="sauvola"):
        TesseractEngine(tessdata=str(tmp_path), passes=("sauvola",))._api("eng", "sauvola")
    assert "eng" in _OldTesseract.ended  # the handle that could not be set up is released, not leaked


@dataclass(frozen=True)
class BrokenEngine(FakeEngine):
    """An engine that identifies itself but cannot read in the worker."""

    def recognise(
        self, pixels: np.ndarray, dpi: float, languages: str, min_confidence: float
    ) -> RecognisedText:
        raise OcrUnavailable("this Tesseract cannot use sauvola thresholding")


def test_an_engine_failing_in_the_worker_fails_the_page_ocr_not_the_document(tmp_path: Path) -> None:
    pdf = list_pdf(tmp_path / "listed.pdf")
    report = convert_corpus(pdf, tmp_path / "out", jobs=1, converter=_converter("always", BrokenEngine()))
    assert not report.failed and report.pages_ocr == 0
    meta = json.loads((tmp_path / "out" / "listed" / "meta.json").read_text())
    assert meta["pages"][0]["text_source"] == "pdf"
    assert "ocr: this Tesseract cannot use sauvola" in meta["pages"][0]["error"]
    assert "Physician Order Entry" in (tmp_path / "out" / "listed" / "document.md").read_text()


@dataclass(frozen=True)
class PassesEngine(FakeEngine):
    """A fake engine that reads with the given thresholding passes (``method`` in meta.json)."""

    method: str = "otsu+sauvola"

    def identify(self, languages: str) -> EngineInfo:
        return EngineInfo("fake", "1.0", self.method)


def test_a_corpus_is_converted_again_when_the_passes_change_and_only_then(tmp_path: Path) -> None:
    scan, out = image_only_pdf(tmp_path / "scan.pdf", ["Only an image"]), tmp_path / "out"
    one = _converter("auto", PassesEngine(method="otsu"))
    assert len(convert_corpus(scan, out, jobs=1, converter=one).converted) == 1
    assert len(convert_corpus(scan, out, jobs=1, converter=one).skipped) == 1
    two = _converter("auto", PassesEngine())
    assert len(convert_corpus(scan, out, jobs=1, converter=two).converted) == 1
    assert len(convert_corpus(scan, out, jobs=1, converter=two).skipped) == 1
    # a corpus from before the passes were recorded (no "method" in its settings) is converted again
    for name in ("manifest.json", "scan/meta.json"):
        data = json.loads((out / name).read_text())
        settings = data["documents"]["scan"]["settings"] if name == "manifest.json" else data["settings"]
        del settings["ocr"]["method"]
        (out / name).write_text(json.dumps(data))
    assert len(convert_corpus(scan, out, jobs=1, converter=two).converted) == 1


_LEPTONICA_PROBE = """
import ctypes, sys
from pathlib import Path
import tesserocr
package = Path(tesserocr.__file__).parent
libs = sorted((package.parent / "tesserocr.libs").glob("libleptonica*"))
if not libs:
    print("no bundled leptonica"); sys.exit(3)
if sys.argv[1] == "quiet":
    from docab_benchmark.mmlongbench.corpus.ocr import _tesserocr
    _tesserocr()
ctypes.CDLL(str(libs[0])).boxClipToRectangle(None, 10, 10)  # an error Leptonica reports on stderr
"""


@pytest.mark.parametrize("mode", ["loud", "quiet"])
def test_leptonica_diagnostics_stay_out_of_the_terminal(mode: str) -> None:
    """Tesseract's image library prints 'Error in ...' lines for cases Tesseract handles itself."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LEPTONICA_PROBE, mode], capture_output=True, text=True, timeout=60
    )
    if done.returncode == 3:
        pytest.skip("tesserocr here is not the Linux wheel with its bundled Leptonica")
    assert done.returncode == 0, done.stderr
    if mode == "loud":  # the probe does make Leptonica speak: the quiet case below is a real test
        assert "Error in boxClipToRectangle" in done.stderr
    else:
        assert done.stderr == ""
