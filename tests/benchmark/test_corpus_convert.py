"""docab convert: layout, lossless page images, determinism, resume, failures recorded, confinement, parallelism."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image

from docab_benchmark.mmlongbench.corpus import ConversionError, RenderSettings, convert_corpus, get_converter
from docab_benchmark.mmlongbench.corpus.png import encode_png, lossless_grey
from docab_benchmark.mmlongbench.corpus.runner import folder_names


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def encrypted_pdf(path: Path) -> Path:
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="secret")
    pdf.set_encryption(owner_password="o", user_password="u", encryption_method=EncryptionMethod.RC4)
    path.write_bytes(bytes(pdf.output()))
    return path


def test_layout_manifest_and_meta(suite_dir: Path, suite_corpus: Path) -> None:
    manifest = json.loads((suite_corpus / "manifest.json").read_text())
    assert manifest["format"] == "docab-corpus/1"
    names = sorted(p.stem for p in (suite_dir / "documents").glob("*.pdf"))
    assert sorted(manifest["documents"]) == names
    for name, entry in manifest["documents"].items():
        assert entry["status"] == "ok" and entry["error"] is None
        assert (
            entry["sha256"]
            == hashlib.sha256((suite_dir / "documents" / f"{name}.pdf").read_bytes()).hexdigest()
        )
        assert entry["converter"] == "pypdfium2" and entry["converter_version"].startswith("docab-")
        meta = json.loads((suite_corpus / name / "meta.json").read_text())
        lines = (suite_corpus / name / "document.md").read_text().splitlines()
        assert lines[0].startswith("# ") and meta["page_count"] == meta["pages_converted"] == 4
        for page in meta["pages"]:
            n = page["page"]
            first, last = page["lines"]
            assert lines[first - 1] == f"## Page {n}"
            assert lines[first + 1] == f"![Page {n}](pages/page-{n:04d}.png)"
            assert (suite_corpus / name / page["image"]).is_file()
            assert (page["width"], page["height"], page["dpi"]) == (1191, 1684, 144.0)  # A4 at 144 dpi
            assert not any(line.startswith("## ") for line in lines[first:last])
        assert all(not line.startswith("## ") or line.startswith("## Page ") for line in lines)


def test_corpus_index_maps_doc_ids_to_folders(suite_corpus: Path) -> None:
    from docab_benchmark.mmlongbench.corpus import corpus_index

    index = corpus_index(suite_corpus)
    assert index["suite-bird-survey.pdf"] == suite_corpus / "suite-bird-survey"
    assert len(index) == 3
    assert corpus_index(suite_corpus / "missing") == {}


def test_page_images_are_lossless_at_144_dpi(suite_dir: Path, suite_corpus: Path) -> None:
    document = pdfium.PdfDocument(str(suite_dir / "documents" / "suite-bird-survey.pdf"))
    reference = document[2].render(scale=2.0, rev_byteorder=True).to_numpy()
    written = np.asarray(
        Image.open(suite_corpus / "suite-bird-survey" / "pages" / "page-0003.png").convert("RGB")
    )
    assert np.array_equal(written, reference)


def test_png_writer_round_trips_every_mode() -> None:
    rng = np.random.default_rng(0)
    for shape in [(7, 5), (7, 5, 3), (7, 5, 4), (1, 1, 3)]:
        pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
        for codec in ("zlib", "isal"):
            decoded = np.asarray(Image.open(io.BytesIO(encode_png(pixels, codec=codec))))
            assert np.array_equal(decoded, pixels)
    grey = np.repeat(rng.integers(0, 256, size=(9, 4, 1), dtype=np.uint8), 3, axis=2)
    assert np.array_equal(lossless_grey(grey), grey[..., 0])
    grey[8, 3, 1] ^= 1  # one coloured pixel in the last row: not grey
    assert lossless_grey(grey) is None
    with pytest.raises(ValueError, match="8-bit"):
        encode_png(np.zeros((2, 2), dtype=np.uint16))
    with pytest.raises(ValueError, match="empty"):
        encode_png(np.zeros((0, 2), dtype=np.uint8))


def test_figures_are_extracted_from_embedded_images(suite_corpus: Path) -> None:
    meta = json.loads((suite_corpus / "suite-annual-report" / "meta.json").read_text())
    chart_page = meta["pages"][2]
    assert chart_page["figures"] == ["figures/page-0003-01.png"]
    chart = Image.open(suite_corpus / "suite-annual-report" / chart_page["figures"][0])
    assert chart.size == (1200, 720)  # the embedded raster at its own resolution
    assert (
        "![Figure 3.1](figures/page-0003-01.png)"
        in (suite_corpus / "suite-annual-report" / "document.md").read_text()
    )


def test_deterministic_and_parallel_output_is_identical(
    suite_dir: Path, suite_corpus: Path, tmp_path: Path
) -> None:
    report = convert_corpus(suite_dir / "documents", tmp_path / "parallel", jobs=2)
    assert len(report.converted) == 3
    assert tree(tmp_path / "parallel") == tree(suite_corpus)


def test_resume_skips_current_documents_and_redoes_changed_ones(suite_dir: Path, tmp_path: Path) -> None:
    pdfs = tmp_path / "pdfs"
    shutil.copytree(suite_dir / "documents", pdfs)
    out = tmp_path / "out"
    events = []
    first = convert_corpus(pdfs, out, jobs=1, progress=events.append)
    assert len(first.converted) == 3 and first.pages_converted == 12
    assert events[-1].pages_done == events[-1].pages_total == 12
    assert {e.finished.name for e in events if e.finished} == {
        "suite-annual-report",
        "suite-bird-survey",
        "suite-visitor-guide",
    }
    again = convert_corpus(pdfs, out, jobs=1)
    assert len(again.skipped) == 3 and not again.converted
    # a changed PDF (same name) is converted again; the others stay skipped
    shutil.copy(pdfs / "suite-visitor-guide.pdf", pdfs / "suite-annual-report.pdf")
    changed = convert_corpus(pdfs, out, jobs=1)
    assert [r.name for r in changed.converted] == ["suite-annual-report"]
    assert "Visitor Guide" in (out / "suite-annual-report" / "document.md").read_text()
    # other settings mean other output: converted again
    no_figures = get_converter("pypdfium2", RenderSettings(figures=False))
    assert len(convert_corpus(pdfs, out, jobs=1, converter=no_figures).converted) == 3
    assert not any((out / "suite-annual-report" / "figures").iterdir())
    assert len(convert_corpus(pdfs, out, jobs=1, converter=no_figures, force=True).converted) == 3
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging folders left


def test_broken_and_encrypted_pdfs_are_recorded_and_the_rest_goes_on(suite_dir: Path, tmp_path: Path) -> None:
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    shutil.copy(suite_dir / "documents" / "suite-visitor-guide.pdf", pdfs)
    (pdfs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (pdfs / "empty.pdf").write_bytes(b"")
    encrypted_pdf(pdfs / "locked.pdf")
    report = convert_corpus(pdfs, tmp_path / "out", jobs=1)
    errors = {r.name: r.error for r in report.failed}
    assert set(errors) == {"broken", "empty", "locked"}
    assert errors["locked"] == "encrypted: the PDF needs a password"
    assert errors["broken"].startswith("damaged or not a PDF")
    assert [r.name for r in report.converted] == ["suite-visitor-guide"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())["documents"]
    assert manifest["locked"]["status"] == "error" and manifest["locked"]["document"] is None
    assert not (tmp_path / "out" / "locked").exists()


def test_never_writes_through_a_symlink_outside_the_output(suite_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("untouched")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "suite-visitor-guide")
    os.symlink(outside / "manifest-target.json", out / "manifest.json")
    report = convert_corpus(suite_dir / "documents" / "suite-visitor-guide.pdf", out, jobs=1)
    assert len(report.converted) == 1
    assert (
        not (out / "suite-visitor-guide").is_symlink()
        and (out / "suite-visitor-guide" / "document.md").is_file()
    )
    assert not (out / "manifest.json").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]


def test_unsafe_and_clashing_file_names_get_safe_folders() -> None:
    names = folder_names(
        [Path("a b.pdf"), Path("a_b.pdf"), Path("...pdf"), Path("manifest.pdf"), Path("x/..hidden.PDF")]
    )
    assert names == ["a_b", "a_b-2", "document", "manifest", "hidden"]


def test_max_pages_and_bad_input(suite_dir: Path, tmp_path: Path) -> None:
    report = convert_corpus(
        suite_dir / "documents" / "suite-bird-survey.pdf", tmp_path / "out", jobs=1, max_pages=2
    )
    assert (report.results[0].pages, report.results[0].pages_converted) == (4, 2)
    assert "## Page 3" not in (tmp_path / "out" / "suite-bird-survey" / "document.md").read_text()
    with pytest.raises(ConversionError, match="neither a PDF file nor a folder"):
        convert_corpus(tmp_path / "missing", tmp_path / "out2")
    with pytest.raises(ConversionError, match="unknown converter 'docling'"):
        get_converter("docling")


def test_shared_dev_pdf_converts_with_headings(tmp_path: Path) -> None:
    from tests.conftest import shared_data

    pdf = shared_data("mmlongbench-dev") / "documents" / "2023.acl-long.386.pdf"
    report = convert_corpus(pdf, tmp_path / "out", jobs=1, max_pages=3)
    text = (tmp_path / "out" / "2023.acl-long.386" / "document.md").read_text()
    assert report.results[0].pages == 24
    assert text.startswith("# Fact-Checking Complex Claims with Program-Guided Reasoning\n")
    assert "### Fact-Checking Complex Claims with Program-Guided Reasoning" in text
    assert "#### 1 Introduction" in text and "requires collecting multiple pieces of evidence" in text
