"""docab data check / convert / score through the CLI entry point, and once through the console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from docab.cli.main import main


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" if not isinstance(r, str) else r + "\n" for r in records))
    return path


RECORDS = [
    {
        "doc_type": "Guidebook",
        "answer": "18.29%",
        "answer_format": "Float",
        "evidence_pages": "[3, 5]",
        "evidence_sources": "['Pure-text (Plain-text)']",
        "pred": "0.1829",
    },
    {
        "doc_type": "Guidebook",
        "answer": "Not answerable",
        "answer_format": "None",
        "evidence_pages": "[]",
        "evidence_sources": "[]",
        "pred": "Not answerable",
    },
    {
        "doc_type": "Brochure",
        "answer": "['a', 'b']",
        "answer_format": "List",
        "evidence_pages": [2],
        "evidence_sources": ["Table"],
        "pred": "['b', 'a']",
    },
    {
        "doc_type": "Brochure",
        "answer": "7",
        "answer_format": "Int",
        "evidence_pages": "[4]",
        "evidence_sources": "['Chart']",
    },
]


def test_score_writes_each_record_with_its_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    predictions = write_jsonl(tmp_path / "preds.jsonl", RECORDS)
    assert main(["score", str(predictions), "--out", str(tmp_path / "scored.jsonl")]) == 0
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [r["score"] for r in scored] == [1.0, 1.0, 1.0, 0.0]  # no pred scores 0
    assert scored[0]["pred"] == "0.1829" and "doc_type" in scored[0]
    out = capsys.readouterr().out
    assert "Acc  75.0 %" in out and "F1" in out and "evidence: Chart" in out and "doc type: Brochure" in out


def test_score_reads_official_json_lists_and_reports_bad_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    official = tmp_path / "res_gpt-4o.json"
    official.write_text(json.dumps(RECORDS[:2]))
    assert main(["score", str(official), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["overall"] == {"n": 2, "acc": 1.0, "f1": 1.0, "recall": 1.0, "precision": 1.0}
    mixed = write_jsonl(
        tmp_path / "mixed.jsonl",
        [RECORDS[0], "{broken", {"pred": "x"}, {"answer": "a", "answer_format": "Bool", "pred": "a"}],
    )
    assert main(["score", str(mixed)]) == 0
    err = capsys.readouterr().err
    assert "line 2: not valid JSON" in err and "line 3: missing answer, answer_format" in err
    assert "line 4: unknown answer_format 'Bool'" in err


def test_score_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path / "missing.jsonl")]) == 2
    assert "docab score: error:" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main(["score", str(tmp_path / "empty.jsonl")]) == 2
    assert "holds no predictions" in capsys.readouterr().err


def test_score_on_a_file_that_is_not_predictions_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("".join(f"line {n} of prose\n" for n in range(600)))
    assert main(["score", str(readme)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "no usable prediction in 600 line(s)" in err and "expected JSON lines" in err


def test_score_names_ten_bad_lines_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"question": "q", "answer": "1", "answer_format": "Int", "pred": "1"}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps(good) + "\n" + "not json\n" * 25)
    assert main(["score", str(mixed)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 11 and err[-1].endswith("and 15 more lines left out (--json lists them all)")
    assert main(["score", str(mixed), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["problems"]) == 25


def test_convert_and_check(suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdfs = tmp_path / "pdfs"
    shutil.copytree(suite_dir / "documents", pdfs)
    assert main(["convert", str(pdfs), "--out", str(tmp_path / "corpus"), "--jobs", "1"]) == 0
    assert "converted 3 document(s), 12 pages" in capsys.readouterr().out
    assert main(["convert", str(pdfs), "--out", str(tmp_path / "corpus"), "--jobs", "1"]) == 0
    assert "3 up to date" in capsys.readouterr().out
    (pdfs / "bad.pdf").write_bytes(b"nope")
    assert main(["convert", str(pdfs), "--out", str(tmp_path / "corpus"), "--jobs", "1"]) == 1
    assert "failed: bad.pdf: damaged or not a PDF" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["convert", str(pdfs), "--out", str(tmp_path / "c"), "--jobs", "0"]) == 2

    assert main(["data", "check", "--data", str(suite_dir)]) == 0
    out = capsys.readouterr().out
    assert "data version: docab-suite/v1" in out and "result: usable" in out
    assert main(["data", "check", "--data", str(tmp_path / "nowhere")]) == 2
    assert "question data not found" in capsys.readouterr().err
    assert main(["data", "check", "--data", str(suite_dir), "--split", "test"]) == 2  # not silently ignored
    error = capsys.readouterr().err
    assert "one split (train), not 'test'" in error and "Hugging Face" in error and error.count("\n") == 1
    assert main(["data", "check", "--data", str(suite_dir), "--split", "train"]) == 0
    capsys.readouterr()
    empty_docs = tmp_path / "no-pdfs"
    empty_docs.mkdir()
    assert main(["data", "check", "--data", str(suite_dir), "--documents", str(empty_docs), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {f["code"]: f["count"] for f in report["findings"]}["missing-pdf"] == 3


def test_console_script_scores(tmp_path: Path) -> None:
    predictions = write_jsonl(tmp_path / "preds.jsonl", RECORDS[:1])
    docab = shutil.which("docab")
    if docab is None:
        pytest.skip("the docab console script is not installed in this environment")
    done = subprocess.run([docab, "score", str(predictions)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Acc 100.0 %" in done.stdout


def test_score_survives_deeply_nested_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = {"question": "q", "answer": "4", "answer_format": "Int", "doc_id": "d.pdf", "pred": "4"}
    lines = tmp_path / "p.jsonl"
    lines.write_text(json.dumps(good) + "\n" + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["score", str(lines)]) == 0
    out, err = capsys.readouterr()
    assert "line 2: JSON nested too deeply to be a prediction" in out + err
    assert "Traceback" not in out + err
    listing = tmp_path / "p.json"
    listing.write_text("[" * 5000 + "]" * 5000)
    assert main(["score", str(listing)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"docab score: error: {listing} is JSON nested too deeply to hold predictions"


def test_convert_ocr_flags_and_a_missing_language_is_one_warning(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdf = suite_dir / "documents" / "suite-visitor-guide.pdf"
    out = tmp_path / "corpus"
    assert main(["convert", str(pdf), "--out", str(out), "--jobs", "1", "--ocr-languages", "qqq"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "OCR is unavailable, so pages keep their PDF text" in warnings[0]
    assert "tesseract-ocr-qqq" in warnings[0] and "converted 1 document(s), 4 pages" in captured.out
    meta = json.loads((out / "suite-visitor-guide" / "meta.json").read_text())
    assert meta["settings"]["ocr"]["engine"] == "unavailable"
    assert {page["text_source"] for page in meta["pages"]} == {"pdf"}
    assert main(["convert", str(pdf), "--out", str(out), "--jobs", "1", "--ocr", "never"]) == 0
    assert "converted 1 document(s)" in capsys.readouterr().out  # other settings: converted again
    assert json.loads((out / "suite-visitor-guide" / "meta.json").read_text())["settings"]["ocr"] == {
        "mode": "never"
    }
    assert main(["convert", str(pdf), "--out", str(out), "--ocr-dpi", "10"]) == 2
    assert "--ocr-dpi must be between 72 and 600" in capsys.readouterr().err
    assert main(["convert", str(pdf), "--out", str(out), "--ocr-languages", "eng;rm -rf"]) == 2
    assert "give Tesseract codes joined by '+'" in capsys.readouterr().err
    for bad in ("otsu+otsu", "binary", ""):
        assert main(["convert", str(pdf), "--out", str(out), "--ocr-passes", bad]) == 2
        error = capsys.readouterr().err
        assert "--ocr-passes" in error and "otsu+sauvola" in error and "Traceback" not in error
