"""Loader, rendering, runner and the docab command on a tiny benchmark made here; the real dev set when present."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from docab.cli.main import main as docab
from docab_benchmark.webextract.data import DataError, load_pages, load_set
from docab_benchmark.webextract.extractors import EXTRACTORS, markdown_to_text
from docab_benchmark.webextract.metric import snippet_counts, snippet_rates
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
    assert "markfetch" in printed and "F1 dev" in printed and "F1 val" in printed and "ms/page" in printed
    (payload,) = json.loads(out.read_text())["sets"]
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
    assert (
        docab(
            ["webextract", "--data", str(make_benchmark(tmp_path / "ok")), "--data", str(tmp_path / "gone")]
        )
        == 2
    )
    assert "gone is not a folder" in capsys.readouterr().err  # checked before any extraction
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


def make_per_file_benchmark(
    root: Path,
    n: int = 4,
    *,
    checkout: bool = False,
    first: int = 1,
    page_types: tuple[str, ...] = (),
) -> Path:
    """The web-content-extraction layout: ground-truth/NNNN.json (schema 2.0) and html/NNNN.html.gz,
    or, as in a checkout of its repository, benchmark/ground-truth/ and release/html/. Pages are
    numbered from ``first``; ``page_types`` labels them in turn, as WCXB's files are labelled."""
    truth_dir = root / ("benchmark/ground-truth" if checkout else "ground-truth")
    html_dir = root / ("release/html" if checkout else "html")
    truth_dir.mkdir(parents=True)
    html_dir.mkdir(parents=True)
    for i in range(first, first + n):
        body = paragraphs(4, topic=f"harbour {i}")
        text = "\n\n".join(re.findall(r"<p>(.*?)</p>", body))
        page = article_page(body, title=f"Page {i}").replace(
            "</body>", "<footer><p>Subscribe to our newsletter for weekly harbour news.</p></footer></body>"
        )
        (html_dir / f"{i:04d}.html.gz").write_bytes(gzip.compress(page.encode()))
        document = {
            "schema_version": "2.0",
            "url": f"https://example.org/{i}",
            "file_id": f"{i:04d}",
            "ground_truth": {
                "title": f"Page {i}",
                "main_content": text,
                "with": [text.split(": ")[0]],
                "without": ["Subscribe to our newsletter", "Cookie settings"],
            },
        }
        if page_types:
            label = page_types[(i - first) % len(page_types)]
            document["_internal"] = {"page_type": {"primary": label, "confidence": "verified"}}
        (truth_dir / f"{i:04d}.json").write_text(json.dumps(document))
    return root


@pytest.mark.parametrize("checkout", [False, True])
def test_the_web_content_extraction_layout_loads_with_its_sentences(tmp_path: Path, checkout: bool) -> None:
    page_set = load_set(make_per_file_benchmark(tmp_path, checkout=checkout))
    assert page_set.layout == "web-content-extraction" and page_set.ai_ground_truth
    assert [p.key for p in page_set.pages] == ["0001", "0002", "0003", "0004"]
    first = page_set.pages[0]
    assert first.url == "https://example.org/1" and "harbour 1" in first.article_body
    assert first.must_contain and first.must_not_contain == ("Subscribe to our newsletter", "Cookie settings")
    assert {p.part for p in page_set.pages} <= {"dev", "validation"}
    assert all(p.part == ("dev" if p.split == "A" else "validation") for p in page_set.pages)
    assert len(load_set(tmp_path, limit=2).pages) == 2


def test_the_article_layout_reads_sentences_when_its_entries_have_them(tmp_path: Path) -> None:
    root = make_benchmark(tmp_path)
    truth = json.loads((root / "ground-truth.json").read_text())
    first = sorted(truth)[0]
    truth[first] |= {"with": ["Paragraph 0 about the topic 0"], "without": ["Cookie settings", ""]}
    (root / "ground-truth.json").write_text(json.dumps(truth))
    page_set = load_set(root)
    assert page_set.layout == "article-extraction" and not page_set.ai_ground_truth
    assert page_set.pages[0].must_contain == ("Paragraph 0 about the topic 0",)
    assert page_set.pages[0].must_not_contain == ("Cookie settings",)  # blank sentences are dropped
    assert page_set.pages[1].must_contain == ()


def test_per_file_layout_errors_say_what_is_missing(tmp_path: Path) -> None:
    root = make_per_file_benchmark(tmp_path / "a", n=2)
    (root / "html" / "0002.html.gz").unlink()
    page_set = load_set(root)  # a page without its HTML is left out and named, as the benchmark's runner does
    assert [p.key for p in page_set.pages] == ["0001"] and page_set.unpaired == ("0002.json",)
    (root / "html" / "0001.html.gz").unlink()
    with pytest.raises(DataError, match="none of the ground-truth files"):
        load_set(root)
    (tmp_path / "b" / "ground-truth").mkdir(parents=True)
    with pytest.raises(DataError, match="no html/ folder"):
        load_set(tmp_path / "b")
    (tmp_path / "b" / "html").mkdir()
    with pytest.raises(DataError, match=r"no \.json ground-truth files"):
        load_set(tmp_path / "b")
    (tmp_path / "b" / "ground-truth" / "0001.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "b" / "html" / "0001.html.gz").write_bytes(gzip.compress(b"<p>x</p>"))
    with pytest.raises(DataError, match="not readable JSON"):  # nested past the parser's depth
        load_set(tmp_path / "b")
    (tmp_path / "b" / "ground-truth" / "0001.json").write_text('{"url": "x"}')
    (tmp_path / "b" / "html" / "0001.html.gz").write_bytes(gzip.compress(b"<p>x</p>"))
    with pytest.raises(DataError, match="no ground_truth object"):
        load_set(tmp_path / "b")


def test_sentences_are_found_case_and_whitespace_blind_and_rates_skip_pages_without_them() -> None:
    text = "The  Boats came in\nlate that evening.\u00a0Subscribe to our NEWSLETTER today"
    counts = snippet_counts(
        text, ["the boats came in late", "a sentence it lost"], ["subscribe to our newsletter"]
    )
    assert (counts.must_found, counts.must_total, counts.must_not_found, counts.must_not_total) == (
        1,
        2,
        1,
        1,
    )
    none = snippet_counts(text, [], [])
    clean = snippet_counts(
        "the boats came in late", ["the boats came in late"], ["cookie settings", "share this"]
    )
    rates = snippet_rates([counts, none, clean])
    assert rates.must == pytest.approx((0.5 + 1.0) / 2) and rates.pages_with_must == 2
    assert rates.must_not == pytest.approx((1.0 + 0.0) / 2) and rates.pages_with_must_not == 2
    assert snippet_rates([none]).must is None


def test_docab_webextract_scores_two_sets_apart_with_dev_validation_and_sentences(
    tmp_path: Path, capsys
) -> None:
    article = make_benchmark(tmp_path / "article", n=4)
    per_file = make_per_file_benchmark(tmp_path / "wceb", n=6)
    out = tmp_path / "out.json"
    argv = [
        "webextract",
        "--data",
        str(article),
        "--data",
        str(per_file),
        "--extractors",
        "markfetch,trafilatura-markdown",
    ]
    assert docab([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ground truth by people" in printed and "AI-made ground truth" in printed
    assert "must-not val" in printed and "gap" in printed
    first, second = json.loads(out.read_text())["sets"]
    assert (first["layout"], second["layout"]) == ("article-extraction", "web-content-extraction")
    assert second["pages"] == 6 and sum(second["parts"].values()) == 6
    for row in second["results"]:
        assert row["must"] == pytest.approx(1.0)  # every page keeps its first sentence
        assert row["must_not"] is not None and 0.0 <= row["must_not"] <= 0.5
        for part, figures in row["parts"].items():
            assert figures["pages"] == second["parts"][part]
        if set(row["parts"]) == {"dev", "validation"}:
            assert row["generalisation_gap_f1"] == pytest.approx(
                row["parts"]["dev"]["f1"] - row["parts"]["validation"]["f1"]
            )
    assert all(row["must"] is None for row in first["results"])  # that set has no sentences

    assert docab([*argv, "--split", "validation", "--json", str(out)]) == 0
    capsys.readouterr()
    for page_set in json.loads(out.read_text())["sets"]:
        assert set(page_set["parts"]) == {"dev", "validation"} and page_set["parts"]["dev"] == 0


def make_wcxb(root: Path) -> Path:
    """WCXB's layout: the publisher's dev/ and test/ folders, each a per-file benchmark."""
    make_per_file_benchmark(root / "dev", n=5, page_types=("article", "forum"))
    make_per_file_benchmark(root / "test", n=3, first=4011, page_types=("article", "forum"))
    return root


def test_wcxb_keeps_its_publishers_split_and_page_types(tmp_path: Path) -> None:
    page_set = load_set(make_wcxb(tmp_path))
    assert page_set.layout == "wcxb" and not page_set.ai_ground_truth
    assert "held-out test set" in page_set.ground_truth
    parts = {p.key: p.part for p in page_set.pages}
    # Not the hash's halves: every dev file is dev and every test file validation.
    assert parts == {
        **dict.fromkeys(["0001", "0002", "0003", "0004", "0005"], "dev"),
        **dict.fromkeys(["4011", "4012", "4013"], "validation"),
    }
    assert [p.page_type for p in page_set.pages[:3]] == ["article", "forum", "article"]
    assert page_set.pages[0].must_not_contain == ("Subscribe to our newsletter", "Cookie settings")
    # --limit takes the first pages of each split, so a quick check still has both parts.
    assert [p.key for p in load_set(tmp_path, limit=2).pages] == ["0001", "0002", "4011", "4012"]
    # A page filed in both splits (WCXB has 139) counts once, in test, as the publisher's metadata has it.
    make_per_file_benchmark(tmp_path / "again", n=1, first=4012)
    for sub in ("ground-truth", "html"):
        for file in (tmp_path / "again" / sub).iterdir():
            file.rename(tmp_path / "dev" / sub / file.name)
    page_set = load_set(tmp_path)
    assert [p.key for p in page_set.pages].count("4012") == 1
    assert {p.key: p.part for p in page_set.pages}["4012"] == "validation"
    assert page_set.duplicates == ("dev/4012.json",)
    (tmp_path / "test" / "html" / "4012.html.gz").unlink()
    assert load_set(tmp_path).unpaired == ("test/4012.json",)
    for html_file in (tmp_path / "test" / "html").iterdir():
        html_file.unlink()
    (tmp_path / "test" / "html").rmdir()
    with pytest.raises(DataError, match=r"test has ground-truth/ but no html/"):
        load_set(tmp_path)


def test_docab_webextract_reports_wcxb_by_page_type(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.json"
    argv = [
        "webextract",
        "--data",
        str(make_wcxb(tmp_path / "wcxb")),
        "--extractors",
        "markfetch,trafilatura-markdown",
        "--json",
        str(out),
    ]
    assert docab(argv) == 0
    printed = capsys.readouterr().out
    assert "held-out test set" in printed and "F1 by page type" in printed
    (page_set,) = json.loads(out.read_text())["sets"]
    assert page_set["layout"] == "wcxb" and page_set["parts"] == {"dev": 5, "validation": 3}
    by_type = page_set["by_page_type"]
    assert set(by_type) == {"article", "forum"}
    articles = by_type["article"]["markfetch"]
    assert articles["dev"]["pages"] == 3 and articles["validation"]["pages"] == 2
    assert by_type["forum"]["trafilatura-markdown"]["validation"]["pages"] == 1
    assert 0.9 <= articles["validation"]["f1"] <= 1.0  # the pages are plain articles
