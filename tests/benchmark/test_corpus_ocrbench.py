"""The OCR recall benchmark: its token rule, its stable halves, and a run on a generated deck."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from fpdf import FPDF

from docab_benchmark.mmlongbench.corpus.ocr import EngineInfo, TesseractEngine
from docab_benchmark.mmlongbench.corpus.ocrbench import Recall, half_of, main, tokens
from docab_benchmark.mmlongbench.corpus.pdfium import engine_status

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def test_tokens_are_normalised_words_of_two_characters_or_digits() -> None:
    assert tokens("Revenue: 4,210 (a) Million x 7") == {"revenue", "4210", "million", "7"}
    assert tokens("") == set()


def test_halves_are_stable_and_split_decks() -> None:
    names = [f"deck-{index}.pdf" for index in range(200)]
    halves = [half_of(name) for name in names]
    assert halves == [half_of(name) for name in names]
    assert 70 < halves.count("tune") < 130


def test_recall_counts_tokens_numbers_and_noise() -> None:
    recall = Recall().add("Sales grew 12% to 4,210 units", "Sales grew 12% to 4210 unlts zz", cpu=0.5)
    assert (recall.truth, recall.found) == (6, 5)  # 'units' read as 'unlts'
    assert (recall.numbers, recall.numbers_found) == (2, 2)
    assert (recall.ocr_tokens, recall.ocr_true) == (7, 5)
    assert recall.row("otsu").split()[:2] == ["otsu", "0.833"]


def test_command_measures_a_generated_deck(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not isinstance(engine_status(TesseractEngine(), "eng"), EngineInfo):
        pytest.skip("Tesseract is not usable here")  # CI installs tesseract-ocr-eng (.ci/run)
    for deck in range(2):
        pdf = FPDF(unit="pt", format=(720, 405))
        pdf.add_font("dejavu", fname=str(FONT))
        for slide in range(2):
            pdf.add_page()
            pdf.set_font("dejavu", size=28)
            pdf.text(40, 80, f"Deck {deck} quarterly results")
            pdf.set_font("dejavu", size=20)
            pdf.text(40, 160, f"Revenue reached {4210 + slide} million")
        (tmp_path / f"deck{deck}.pdf").write_bytes(bytes(pdf.output()))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    assert main([str(tmp_path), "--per-document", "1", "--jobs", "1", "--passes", "otsu"]) == 0
    captured = capsys.readouterr()
    assert "3 PDFs, 2 pages sampled" in captured.out and "skipped broken.pdf" in captured.err
    rows = [line.split() for line in captured.out.splitlines() if line.startswith("otsu ")]
    measured = [float(row[1]) for row in rows if row[1] != "n/a"]  # both decks may hash to one half
    assert measured and all(share > 0.9 for share in measured)  # clean slide text comes back almost whole
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--passes", "otsu,binary"])
    assert "--passes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing")])
    assert "is not a folder" in capsys.readouterr().err
