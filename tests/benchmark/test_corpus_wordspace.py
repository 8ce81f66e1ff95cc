"""Word spaces PDFium drops: the geometry rule, the vocabulary rule, and generated PDFs end to end.

The PDFs are written with fpdf2: a dropped space is two words written as separate text objects a
little apart (closer than PDFium's own space threshold, about 0.16 em here), with no space
character between them. Negatives: letter-spaced text, a word with a small kern, a real word with
a wide gap inside it (``the|rapy``), a word the document uses often set apart once, a name made
of two common words, a word broken across two lines without a hyphen, Chinese and Thai lines set
apart like words (in a box-glyph font made here with fontTools), and the same document with the
feature off (``RenderSettings`` and ``docab convert --no-word-spaces``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import matplotlib
import pytest
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fpdf import FPDF

from docab.cli.main import main
from docab_benchmark.mmlongbench.corpus import RenderSettings, convert_corpus, get_converter
from docab_benchmark.mmlongbench.corpus.model import GapCandidate, PageContent, TextLine
from docab_benchmark.mmlongbench.corpus.ocr import OcrSettings
from docab_benchmark.mmlongbench.corpus.wordspace import (
    MAX_JOINED_COUNT,
    MIN_EXCESS_EM,
    MIN_GAP_EM,
    MIN_PART_COUNT,
    in_spaced_script,
    restore_word_spaces,
    run_gaps,
    runs_to_measure,
    split_gap,
    splits_into_words,
    word_counts,
    word_key,
)

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
SIZE = 10.0
BODY = "We turned the lights off but the castle stayed bright, with the new gate left out in the rain."


# --- geometry (pure) -------------------------------------------------------------------------------


def boxes(
    advances: list[float], gaps: list[float], *, em: float = 10.0
) -> list[tuple[float, float, float, float]]:
    """Loose boxes of glyphs with these advances (ems) and gaps (ems) after each but the last."""
    out, x = [], 100.0
    for index, advance in enumerate(advances):
        out.append((x, x + advance * em, 200.0, 200.0 + em))
        x += advance * em + (gaps[index] * em if index < len(gaps) else 0.0)
    return out


def test_run_gaps_are_in_ems_and_refuse_runs_off_one_baseline() -> None:
    assert run_gaps(boxes([0.5, 0.5, 0.5], [0.0, 0.1])) == pytest.approx([0.0, 0.1])
    assert run_gaps(boxes([0.5], [])) == []
    raised = boxes([0.5, 0.5, 0.5], [0.0, 0.1])
    raised[2] = (raised[2][0], raised[2][1], 203.0, 213.0)  # a superscript: another baseline
    assert run_gaps(raised) is None
    larger = boxes([0.5, 0.5, 0.5], [0.0, 0.1])
    larger[2] = (larger[2][0], larger[2][1], 200.0, 212.0)  # another size
    assert run_gaps(larger) is None
    flat = [(100.0, 105.0, 200.0, 200.0), (105.0, 110.0, 200.0, 200.0)]  # rotated text: no height
    assert run_gaps(flat) is None
    backwards = [(110.0, 115.0, 200.0, 210.0), (100.0, 105.0, 200.0, 210.0)]  # right to left
    assert run_gaps(backwards) is None
    # a ligature read as two letters: both share one glyph's box, so the run says nothing
    ligature = [(100.0, 106.0, 200.0, 210.0), (100.0, 106.0, 200.0, 210.0), (106.0, 111.0, 200.0, 210.0)]
    assert run_gaps(ligature) is None


def test_split_gap_wants_one_gap_clearly_wider_than_the_others() -> None:
    assert split_gap([0.0, 0.0, 0.12, 0.0, 0.0]) == 2
    assert split_gap([0.0, 0.01, -0.03, 0.02]) is None  # kerning: small, mostly negative
    assert split_gap([0.25, 0.25, 0.26, 0.25]) is None  # letter-spaced: every gap wide
    assert split_gap([0.0, 0.12, 0.0, 0.12, 0.0]) is None  # two candidates: neither stands out
    assert split_gap([]) is None


def test_split_gap_limits_at_their_edges() -> None:
    assert split_gap([0.0, MIN_GAP_EM]) == 1
    assert split_gap([0.0, MIN_GAP_EM - 0.001]) is None
    assert split_gap([0.02, 0.02 + MIN_EXCESS_EM]) == 1
    assert split_gap([0.02, 0.02 + MIN_EXCESS_EM - 0.001]) is None
    assert split_gap([MIN_GAP_EM]) == 0  # a run of two letters has no other gap to compare


# --- vocabulary (pure) -----------------------------------------------------------------------------


def page(number: int, *texts: str, gaps: dict[str, int] | None = None) -> PageContent:
    """A page of lines; ``gaps`` maps a run of letters to the offset inside it of a gap candidate."""
    lines = []
    for text in texts:
        candidates = tuple(
            GapCandidate(text.index(run) + at, 0.1) for run, at in (gaps or {}).items() if run in text
        )
        lines.append(TextLine(text, SIZE, gaps=candidates))
    return PageContent(number, tuple(lines), None)


def test_splits_into_words_needs_a_rare_run_and_common_parts() -> None:
    from collections import Counter

    counts = Counter({"off": MIN_PART_COUNT, "but": MIN_PART_COUNT, "offbut": 1, "of": 50, "fbut": 0})
    assert splits_into_words("offbut", 3, counts)
    assert not splits_into_words("offbut", 2, counts)  # "of" is common, "fbut" is not a word
    assert not splits_into_words("offbut", 3, Counter({**counts, "but": MIN_PART_COUNT - 1}))
    assert splits_into_words("offbut", 3, Counter({**counts, "offbut": MAX_JOINED_COUNT}))
    assert not splits_into_words("offbut", 3, Counter({**counts, "offbut": MAX_JOINED_COUNT + 1}))
    assert splits_into_words("OffBut", 3, counts)  # case folded


def test_single_letter_parts_are_only_a_and_I() -> None:
    from collections import Counter

    counts = Counter({"book": 9, "think": 9, "i": 90, "a": 90, "x": 90, "ray": 9})
    assert splits_into_words("abook", 1, counts)
    assert splits_into_words("Ithink", 1, counts)
    assert not splits_into_words("ithink", 1, counts)  # lower-case i is not the pronoun
    assert not splits_into_words("xray", 1, counts)


def test_scripts_without_word_spaces_are_never_split() -> None:
    from collections import Counter

    chinese = Counter({"中文": 9, "字符": 9, "中文字符": 1})
    assert not splits_into_words("中文字符", 2, chinese)
    thai = Counter({"ภาษา": 9, "ไทย": 9, "ภาษาไทย": 1})
    assert not splits_into_words("ภาษาไทย", 4, thai)
    arabic = Counter({"ال": 9, "عربية": 9, "العربية": 1})
    assert not splits_into_words("العربية", 2, arabic)
    assert in_spaced_script("Straße") and in_spaced_script("Привет") and in_spaced_script("ﬁnd")
    assert not in_spaced_script("abc中")


def test_runs_to_measure_are_rare_runs_that_cut_into_words_the_pages_use() -> None:
    text = (
        "off but off but offbut theRapy the castle with I think Ithink book abook ab xyz 中文 字符 中文字符"
    )
    assert runs_to_measure([text]) == frozenset({"offbut", "ithink", "abook"})
    # a third sighting makes a run a word of its own; counted over all the texts given
    assert "offbut" not in runs_to_measure([text, "offbut offbut"])
    assert "offbut" in runs_to_measure([text, "offbut"])
    assert runs_to_measure([]) == frozenset()


def test_word_key_unfolds_ligatures_and_case() -> None:
    assert word_key("Oﬃce") == "office"
    assert word_key("TABLE") == "table"


def test_restore_word_spaces_puts_back_only_what_both_rules_agree_on() -> None:
    common = [BODY] * MIN_PART_COUNT
    pages = [
        page(1, *common),
        page(
            2,
            "He turned it offbut the light stayed",
            "The castlewith gate",
            gaps={"offbut": 3, "castlewith": 6},
        ),
    ]
    restored = restore_word_spaces(pages)
    assert [line.text for line in restored[1].lines] == [
        "He turned it off but the light stayed",
        "The castle with gate",
    ]
    assert restored[1].spaces_restored == ("off but", "castle with")
    assert restored[0].spaces_restored == ()
    assert all(not line.gaps for p in restored for line in p.lines)


def test_restore_word_spaces_keeps_runs_the_vocabulary_does_not_support() -> None:
    pages = [
        page(1, BODY),  # each part only once: not common enough
        page(2, "He turned it offbut the light stayed", gaps={"offbut": 3}),
        page(3, "Newcastle is a city", gaps={"Newcastle": 3}),
    ]
    restored = restore_word_spaces(pages)
    assert [line.text for p in restored for line in p.lines] == [p.lines[0].text for p in pages]
    assert all(p.spaces_restored == () for p in restored)
    # a candidate that no longer sits between two letters (the text changed) is ignored
    moved = replace(pages[1], lines=(replace(pages[1].lines[0], gaps=(GapCandidate(2, 0.1),)),))
    assert restore_word_spaces([page(1, *[BODY] * 3), moved])[1].lines[0].text == pages[1].lines[0].text


def test_restore_word_spaces_without_candidates_counts_nothing() -> None:
    pages = [page(1, BODY), page(2, "offbut")]
    assert restore_word_spaces(pages) == pages
    assert word_counts(pages)["the"] == 4


# --- generated PDFs, end to end --------------------------------------------------------------------

CJK_THAI = "中文字符ภาษาไทย"


def box_font(path: Path, chars: str) -> Path:
    """A TrueType font whose glyphs for ``chars`` are filled boxes 1 em wide (no CJK font is installed)."""
    chars = "".join(dict.fromkeys(chars))
    names = [".notdef", "space", *(f"g{ord(c):04x}" for c in chars)]
    builder = FontBuilder(1000, isTTF=True)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap({0x20: "space", **{ord(c): f"g{ord(c):04x}" for c in chars}})
    glyphs = {}
    for name in names:
        pen = TTGlyphPen(None)
        if name not in (".notdef", "space"):
            pen.moveTo((100, 0))
            pen.lineTo((100, 700))
            pen.lineTo((900, 700))
            pen.lineTo((900, 0))
            pen.closePath()
        glyphs[name] = pen.glyph()
    builder.setupGlyf(glyphs)
    builder.setupHorizontalMetrics({name: (250 if name == "space" else 1000, 100) for name in names})
    builder.setupHorizontalHeader(ascent=880, descent=-120)
    builder.setupNameTable({"familyName": "Box", "styleName": "Regular"})
    builder.setupOS2(sTypoAscender=880, sTypoDescender=-120, usWinAscent=880, usWinDescent=120)
    builder.setupPost()
    builder.save(str(path))
    return path


def _text(pdf: FPDF, x: float, y: float, *parts: tuple[str, float]) -> None:
    """Write ``parts`` left to right from ``x`` as separate text objects, each followed by its gap (ems)."""
    for text, gap in parts:
        pdf.text(x, y, text)
        x += pdf.get_string_width(text) + gap * SIZE


def dropped_spaces_pdf(path: Path) -> Path:
    """Page 1: body text using off, but, with, out, new, castle, some, thing, the often.

    Page 2: the Latin cases. Page 3: Chinese and Thai words, each used three times on its own and
    once joined to the next with its glyphs a wide gap apart.
    """
    pdf = FPDF(unit="pt", format=(520, 420))
    pdf.add_font("dejavu", fname=str(FONT))
    pdf.add_font("box", fname=str(box_font(path.with_suffix(".ttf"), CJK_THAI)))
    pdf.set_font("dejavu", size=SIZE)
    pdf.add_page()
    for index in range(8):
        pdf.text(30, 40 + 16 * index, BODY)
    pdf.text(30, 200, "Some people bring a thing or some thing else, and some bring nothing at all.")
    pdf.text(30, 216, "A thing is a thing, some say.")
    pdf.text(30, 232, "Without a plan, without a map and without a guide, they went on.")
    pdf.add_page()
    _text(pdf, 30, 40, ("The guard turned the lights off", 0.12), ("but nobody saw it.", 0))  # dropped
    pdf.set_char_spacing(3)  # letter-spaced: every gap 0.3 em
    pdf.text(30, 60, "WITHOUT")
    pdf.set_char_spacing(0)
    _text(pdf, 30, 80, ("A fence with", 0.02), ("out a gate.", 0))  # a small kern: one word
    pdf.text(30, 100, "They drove to Newcastle on Sunday.")  # a name set as one word
    _text(pdf, 30, 120, ("Its sign read New", 0.12), ("castle in large letters.", 0))  # set apart
    pdf.text(30, 140, "They had forgotten some")  # a word broken over two lines, no hyphen
    pdf.text(30, 154, "thing at the station.")
    _text(pdf, 30, 170, ("A course of the", 0.12), ("rapy helped.", 0))  # a real word, a wide gap in it
    _text(pdf, 30, 186, ("They left with", 0.12), ("out a word.", 0))  # "without" is common: one word
    pdf.add_page()
    pdf.set_font("box", size=SIZE)
    pdf.text(30, 40, "中文 中文 中文 字符 字符 字符 ภาษา ภาษา ภาษา ไทย ไทย ไทย")
    _text(pdf, 30, 60, ("中文", 0.12), ("字符", 0))
    _text(pdf, 30, 80, ("ภาษา", 0.12), ("ไทย", 0))
    path.write_bytes(bytes(pdf.output()))
    return path


def _page(out: Path, number: int) -> tuple[list[str], dict[str, object]]:
    folder = out / "dropped"
    text = (folder / "document.md").read_text(encoding="utf-8")
    section = text[text.index(f"## Page {number}") :]
    section = (
        section[: section.find(f"## Page {number + 1}")] if f"## Page {number + 1}" in section else section
    )
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    return section.splitlines(), meta["pages"][number - 1]


def _page_two(out: Path) -> tuple[list[str], dict[str, object]]:
    return _page(out, 2)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("wordspace")
    pdf = dropped_spaces_pdf(root / "dropped.pdf")
    settings = RenderSettings(figures=False, ocr=OcrSettings(mode="never"))
    on = convert_corpus(pdf, root / "on", converter=get_converter(settings=settings), jobs=1)
    off = convert_corpus(
        pdf, root / "off", converter=get_converter(settings=replace(settings, word_spaces=False)), jobs=1
    )
    assert not on.failed and not off.failed
    return root / "on", root / "off"


def test_pdfium_drops_the_spaces_this_pdf_hides(converted: tuple[Path, Path]) -> None:
    lines, meta = _page_two(converted[1])
    assert "The guard turned the lights offbut nobody saw it." in lines
    assert "Its sign read Newcastle in large letters." in lines
    assert meta["spaces_restored"] == 0 and meta["spaces_restored_words"] == []


def test_a_dropped_space_is_restored_and_recorded(converted: tuple[Path, Path]) -> None:
    lines, meta = _page_two(converted[0])
    assert "The guard turned the lights off but nobody saw it." in lines
    assert meta["spaces_restored"] == 2
    assert meta["spaces_restored_words"] == ["off but", "New castle"]


def test_no_space_where_the_glyphs_are_not_set_apart(converted: tuple[Path, Path]) -> None:
    lines, _ = _page_two(converted[0])
    assert "WITHOUT" in lines  # letter-spaced: no gap stands out
    assert "A fence without a gate." in lines  # kerned a little: one word
    assert "They drove to Newcastle on Sunday." in lines  # a name, set as one word, stays one
    assert "They had forgotten some" in lines and "thing at the station." in lines
    assert "A course of therapy helped." in lines  # "rapy" is no word of the document
    assert "They left without a word." in lines  # the document writes "without" as one word


def test_chinese_and_thai_are_never_split(converted: tuple[Path, Path]) -> None:
    lines, meta = _page(converted[0], 3)
    assert "中文字符" in lines and "ภาษาไทย" in lines
    assert meta["spaces_restored"] == 0


def test_a_name_set_apart_on_the_page_reads_as_two_words(converted: tuple[Path, Path]) -> None:
    """The rule follows the page: glyphs a word space apart read as two words, even in a name."""
    lines, _ = _page_two(converted[0])
    assert "Its sign read New castle in large letters." in lines


def test_the_setting_is_recorded_and_changes_the_version_check(converted: tuple[Path, Path]) -> None:
    on = json.loads((converted[0] / "manifest.json").read_text())["documents"]["dropped"]
    off = json.loads((converted[1] / "manifest.json").read_text())["documents"]["dropped"]
    assert on["settings"]["word_spaces"] is True and off["settings"]["word_spaces"] is False


def test_docab_convert_no_word_spaces_switch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = dropped_spaces_pdf(tmp_path / "dropped.pdf")
    common = ["convert", str(pdf), "--ocr", "never", "--no-figures", "--jobs", "1", "--dpi", "18"]
    assert main([*common, "--out", str(tmp_path / "off"), "--no-word-spaces"]) == 0
    assert main([*common, "--out", str(tmp_path / "on")]) == 0
    lines, meta = _page_two(tmp_path / "off")
    assert "The guard turned the lights offbut nobody saw it." in lines and meta["spaces_restored"] == 0
    lines, meta = _page_two(tmp_path / "on")
    assert "The guard turned the lights off but nobody saw it." in lines and meta["spaces_restored"] == 2
    capsys.readouterr()
    assert main(["convert", "--help"]) == 0
    assert "--no-word-spaces" in capsys.readouterr().out
