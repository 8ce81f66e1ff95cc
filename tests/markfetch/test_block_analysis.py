"""notebooks/markfetch_block_classifier.py: the reader view's blocks and the metric's label for each.

The classifiers need scikit-learn (not a dependency); what they are trained on is tested here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from docab_benchmark.webextract.data import Page

ROOT = Path(__file__).resolve().parents[2]

ARTICLE = " ".join(
    f"<p>Paragraph {n} of the story tells how the river town rebuilt its bridge after the flood of"
    f" spring, with {n} details the engineers reported to the council in their final review.</p>"
    for n in range(8)
)
PROMO = "<p>Subscribe to our newsletter for weekly deals on garden furniture and kitchen gadgets today.</p>"
PAGE = f"""<html><head><title>Bridge</title></head><body><article class="post-body">
<h1>The bridge</h1>{ARTICLE}<div class="callout-box">{PROMO}</div></article></body></html>"""


def _notebook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "block_notebook", ROOT / "notebooks/markfetch_block_classifier.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module's annotations through it
    spec.loader.exec_module(module)
    return module


def test_blocks_carry_text_ancestry_and_the_metrics_verdict() -> None:
    notebook = _notebook()
    truth = " ".join(p.split(">", 1)[1].split("<")[0] for p in ARTICLE.split("</p>") if p.strip())
    page = Page(
        key="k", url="https://news.example/bridge", html=PAGE, article_body=truth, page_type="article"
    )
    result = notebook.page_blocks(page, "test")
    assert result is not None
    texts = [block.text for block in result.blocks]
    promo = next(i for i, text in enumerate(texts) if text.startswith("Subscribe"))
    story = next(i for i, text in enumerate(texts) if text.startswith("Paragraph 3"))
    # Dropping the promotion raises the page's F1; dropping a paragraph of the story lowers it.
    assert result.labels[promo] > 0
    assert result.labels[story] < 0
    assert result.host == "news.example"
    ancestors = result.blocks[promo].ancestors
    assert ancestors is not None
    assert any("callout" in ancestor.words for ancestor in ancestors)
    features = notebook.block_features(result)
    assert features[promo]["furniture"] > 0
    assert features[story]["furniture"] == 0
    assert features[promo]["near_class:callout"] == 1.0
