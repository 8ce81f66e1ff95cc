"""Loader, rendering, runner and the docab command on a tiny benchmark made here; the real dev set when present."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from docab.cli.main import main as docab
from docab_benchmark.webextract.data import DataError, load_pages
from docab_benchmark.webextract.extractors import EXTRACTORS, markdown_to_text
from docab_benchmark.webextract.runner import evaluate
from tests.conftest import shared_data
from tests.markfetch.pages import article_page, paragraphs


def make_benchmark(root: Path, n: int = 3) -> Path:
    (root / "html").mkdir(parents=True)
    truth = {}
    for i in range(n):
        key = f"{i:064x}"
        body = paragraphs(4, topic=f"topic {i}")
        (root / "html" / f"{key}.html.gz").write_bytes(
            gzip.compress(article_page(body, title=f"Page {i}").encode())
        )
        text = "\n".join(
            f"Paragraph {j} about the topic {i}: the boats came in late that evening and the crew unloaded "
            f"their catch under the lamps while the gulls circled above the quay, waiting for scraps number {j}."
            for j in range(4)
        )
        truth[key] = {"url": f"https://example.org/{i}", "articleBody": text}
    (root / "ground-truth.json").write_text(json.dumps(truth))
    return root


def test_load_pages_and_stable_splits(tmp_path: Path) -> None:
    pages = load_pages(make_benchmark(tmp_path))
    assert [p.url for p in pages] == [
        "https://example.org/0",
        "https://example.org/1",
        "https://example.org/2",
    ]
    assert "Paragraph 3 about the topic 2" in pages[2].html
    assert {p.split for p in pages} <= {"A", "B"}
    assert [p.split for p in pages] == [p.split for p in load_pages(tmp_path)]
    assert len(load_pages(tmp_path, limit=2)) == 2


def test_loader_errors_say_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a folder"):
        load_pages(tmp_path / "nope")
    with pytest.raises(DataError, match=r"ground-truth\.json is missing"):
        load_pages(tmp_path)
    make_benchmark(tmp_path / "b")
    next((tmp_path / "b" / "html").iterdir()).unlink()
    with pytest.raises(DataError, match="is missing"):
        load_pages(tmp_path / "b")


def test_markdown_renders_to_text_without_markup() -> None:
    text = markdown_to_text(
        "# Title\n\nSome **bold** [link](https://x.org/a_b) and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert "https" not in text and "**" not in text and "|" not in text and "#" not in text
    assert text.split() == ["Title", "Some", "bold", "link", "and", "code.", "a", "b", "1", "2"]


def test_runner_scores_and_times_every_extractor(tmp_path: Path) -> None:
    pages = load_pages(make_benchmark(tmp_path))
    ticks = iter(range(1000))
    results = evaluate(
        pages, [EXTRACTORS["markfetch"], EXTRACTORS["trafilatura-text"]], clock=lambda: next(ticks)
    )
    for result in results:
        assert set(result.counts) == {p.key for p in pages}
        assert result.scores().f1 > 0.9
        assert result.ms_per_page == 1000.0  # one fake tick per call
        assert result.failures == []


def test_runner_survives_a_failing_extractor(tmp_path: Path) -> None:
    from docab_benchmark.webextract.extractors import Extractor

    def boom(html: str, url: str) -> str:
        raise RuntimeError("bad page")

    pages = load_pages(make_benchmark(tmp_path, n=2))
    (result,) = evaluate(pages, [Extractor("boom", "always fails", boom, markdown=False)])
    assert result.failures == [p.key for p in pages] and result.scores().recall == 0.0


def test_docab_webextract_command(tmp_path: Path, capsys) -> None:
    data = make_benchmark(tmp_path / "data")
    out = tmp_path / "out.json"
    assert (
        docab(
            [
                "webextract",
                "--data",
                str(data),
                "--extractors",
                "markfetch,trafilatura-markdown",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "markfetch" in printed and "precision" in printed and "ms/page" in printed
    payload = json.loads(out.read_text())
    assert payload["pages"] == 3 and [r["extractor"] for r in payload["results"]] == [
        "markfetch",
        "trafilatura-markdown",
    ]
    assert all(0.9 < r["f1"] <= 1.0 for r in payload["results"])
    assert "F1 minus trafilatura-markdown's on the same pages" in printed
    difference = payload["results"][0]["f1_difference_vs_trafilatura-markdown"]
    assert set(difference) >= {"all"} and difference["all"]["pages"] == 3
    for figures in difference.values():
        assert figures["low"] <= figures["estimate"] <= figures["high"]
    assert "f1_difference_vs_trafilatura-markdown" not in payload["results"][1]  # the baseline itself


def test_docab_webextract_bad_input(tmp_path: Path, capsys) -> None:
    assert docab(["webextract", "--data", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert docab(["webextract", "--data", str(tmp_path), "--extractors", "nope"]) == 2
    assert "unknown extractor" in capsys.readouterr().err


@pytest.mark.shared_data
def test_dev_set_loads_and_markfetch_beats_a_floor() -> None:
    pages = load_pages(shared_data("article-extraction-dev"))
    assert len(pages) == 121 and all(p.article_body for p in pages)
    sample = pages[::12]  # 11 pages spread over the set, enough to catch a broken pipeline
    (result,) = evaluate(sample, [EXTRACTORS["markfetch"]])
    assert result.failures == []
    assert result.scores().f1 > 0.9


@pytest.mark.slow
@pytest.mark.shared_data
def test_dev_set_markfetch_beats_plain_trafilatura_markdown() -> None:
    pages = load_pages(shared_data("article-extraction-dev"))
    markfetch, trafilatura = evaluate(pages, [EXTRACTORS["markfetch"], EXTRACTORS["trafilatura-markdown"]])
    assert markfetch.scores().f1 > trafilatura.scores().f1
