# %% [markdown]
# # Can a learned block filter raise markfetch's precision? (issue 25)
#
# markfetch loses to a perfect extractor on precision: on unseen article pages it keeps blocks the
# ground truth leaves out. Rules chosen by hand on the dev pages did not carry over to the
# validation parts, so this analysis asks whether a *learned* filter would: a classifier over the
# reader view's blocks, trained on dev pages, that drops the blocks it calls boilerplate.
#
# Method, fixed before any result was seen:
#
# - Pages: the **dev parts only** of the sets given with `--data` (validation parts are never
#   read). A page of one set that is also a validation page of a set given with
#   `--exclude-validation-of` (same HTML) is left out: WCXB's dev set holds most of the
#   web-content-extraction benchmark's validation pages.
# - Blocks: the reader view's article (`markfetch.extract.reader_body`, every cut extraction makes)
#   split as the consensus cut reads it (`block_container`, `reading_blocks`), each rendered to
#   text as the benchmark scores it. Pages where the reader view is not used (the whole-body
#   fallback) are left out.
# - Label: what dropping the block alone does to the page's F1 (the benchmark's 4-word shingles):
#   a block whose removal raises F1 is boilerplate, weighted by how much. This is the metric's own
#   verdict, not a guess from the block's words.
# - Features: the block's size, link density, tag, place in the article, its share in the second
#   opinion (Readability, as the consensus cut uses it), furniture and call-to-action words, photo
#   credits; and the class/id words, tags and roles of its element's ancestors in the page
#   (found by the block's text), which the reader view's output no longer carries.
# - Models: logistic regression and gradient-boosted trees (scikit-learn).
# - Estimate: 5-fold cross-validation **grouped by site** (host name), so a site's template is
#   never both trained and tested on: what a filter trained on these pages would do on sites it
#   has not seen. The table gives P/R/F1 (the benchmark's per-page averages) with every block
#   kept, then with blocks dropped below each probability threshold.
#
# Run (scikit-learn is not a dependency of the project; `--with` adds it for this run only):
#
#     uv run --with scikit-learn python notebooks/markfetch_block_classifier.py \
#         --data ../shared/data/article-extraction-dev --data wcxb --exclude-validation-of wceb
#
# Result on 9018738's extraction (2026-12-05; 63 article-extraction dev pages and 859 WCXB dev
# pages read by the reader view, 46,488 blocks; 2-vCPU machine shared with other jobs, 9 minutes):
# dropping the blocks the metric itself says to drop (the oracle) would raise F1 on article pages
# from 0.9375 to 0.9624 (P 0.936 -> 0.986), but neither model finds them on sites it was not
# trained on: the best (boosted trees, threshold 0.3) gives article pages 0.9384 (+0.0009) and
# the article-extraction pages 0.9846 (+0.0012); logistic regression only lowers F1. A sample of
# 45 such blocks from WCXB dev article pages held image captions and photo credits, in-article
# promotions, and paragraphs of the article that its ground truth omits: blocks that look like
# the article's own. Nothing was built on it; see docs/figures.md.

# %%
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import re
import sys
from collections.abc import Iterable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from lxml import etree, html

from docab_benchmark.webextract.data import Page, load_set
from docab_benchmark.webextract.extractors import markdown_to_text
from docab_benchmark.webextract.metric import PageCounts, aggregate, page_counts, tokenize
from markfetch import consensus, footnotes, htmlprep
from markfetch.extract import block_container, reader_body
from markfetch.markdown import html_to_markdown
from markfetch.shingles import shingles

ANCESTOR_LEVELS = 12  # how far up the page a block's class/id words are read
NEAR_LEVELS = 3  # ancestors this close also give "near:" features
FOLDS = 5
THRESHOLDS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


@dataclass(frozen=True)
class Ancestor:
    tag: str
    words: tuple[str, ...]  # class and id split into lower-case words
    role: str
    depth: int  # 0 for the element holding the block's text


@dataclass(frozen=True)
class Block:
    tag: str
    text: str  # whitespace-collapsed text of the block's element
    link_chars: int
    links: int
    items: int
    shared: int  # shingles the second opinion also has
    shingle_total: int
    tokens: tuple[str, ...]  # the words the benchmark scores, from the block rendered alone
    ancestors: tuple[Ancestor, ...] | None  # None when the block's element was not found in the page


@dataclass(frozen=True)
class PageBlocks:
    source: str  # the set's folder name
    key: str
    host: str
    page_type: str
    truth: str
    blocks: tuple[Block, ...]
    labels: tuple[float, ...] = field(default=())  # per block: page F1 without it minus with it


# %% [markdown]
# ## Blocks of the reader view, and what dropping each does to the page's F1

# %%
_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _source_index(tree: html.HtmlElement) -> dict[str, html.HtmlElement]:
    """Element by its collapsed text; the deepest element wins when ancestors have the same text."""
    index: dict[str, html.HtmlElement] = {}
    for element in tree.iter():
        if isinstance(element.tag, str) and isinstance(element, html.HtmlElement):
            text = _collapsed(element.text_content())
            if 3 <= len(text) <= 3000:
                index[text] = element
    return index


def _ancestors(element: etree._Element) -> tuple[Ancestor, ...]:
    found: list[Ancestor] = []
    depth = 0
    current: etree._Element | None = element
    while current is not None and depth <= ANCESTOR_LEVELS:
        tag = current.tag
        if not isinstance(tag, str) or tag in ("body", "html"):
            break
        words: set[str] = set()
        for attribute in ("class", "id"):
            value = _CAMEL.sub(" ", current.get(attribute) or "").lower()
            words.update(word for word in _SPLIT.split(value) if 2 <= len(word) <= 20)
        found.append(Ancestor(tag, tuple(sorted(words)), current.get("role") or "", depth))
        current = current.getparent()
        depth += 1
    return tuple(found)


def page_blocks(page: Page, source: str) -> PageBlocks | None:
    """The reader view's blocks of ``page``; None when extraction uses the whole-body fallback."""
    tree, _ = htmlprep.parse_page(page.html)
    if tree is None:
        return None
    prepared = htmlprep.prepare(tree)
    footnotes.take_footnotes(tree)
    body = reader_body(tree, prepared)
    if body is None:
        return None
    reference = shingles(consensus.second_opinion_text(tree))
    index = _source_index(tree)
    blocks: list[Block] = []
    for element in consensus.reading_blocks(block_container(body)):
        if not isinstance(element.tag, str):
            continue
        text = _collapsed("".join(element.itertext()))
        own = shingles(text)
        markdown = html_to_markdown(deepcopy(element), code_languages=prepared.code_languages, images=False)
        located = index.get(text)
        blocks.append(
            Block(
                tag=element.tag,
                text=text,
                link_chars=sum(len(_collapsed("".join(a.itertext()))) for a in element.iter("a")),
                links=sum(1 for _ in element.iter("a")),
                items=sum(1 for _ in element.iter("li")),
                shared=sum((own & reference).values()),
                shingle_total=sum(own.values()),
                tokens=tuple(tokenize(markdown_to_text(markdown))),
                ancestors=None if located is None else _ancestors(located),
            )
        )
    if len(blocks) < 2:
        return None
    host = urlparse(page.url).hostname or page.key
    result = PageBlocks(source, page.key, host, page.page_type, page.article_body, tuple(blocks))
    return dataclasses.replace(result, labels=drop_gains(result))


def _f1(counts: PageCounts) -> float:
    return counts.f1


def drop_gains(page: PageBlocks) -> tuple[float, ...]:
    """Per block, the page's F1 with that block dropped minus its F1 with every block kept."""
    spans = [block.tokens for block in page.blocks]
    everything = " ".join(token for span in spans for token in span)
    base = _f1(page_counts(page.truth, everything))
    gains = []
    for skip in range(len(spans)):
        rest = " ".join(token for index, span in enumerate(spans) if index != skip for token in span)
        gains.append(_f1(page_counts(page.truth, rest)) - base)
    return tuple(gains)


# %% [markdown]
# ## Features

# %%
_FURNITURE = re.compile(
    r"\b(subscribe|newsletters?|sign up|follow us|share (this|on)|read more|related|recommended|"
    r"you (may|might) also like|advertisement|advertising|sponsored|comments?|copyright|"
    r"all rights reserved|cookies?|privacy|terms of|click here|download|log ?in|sign in|podcast|"
    r"tags?|filed under|about the author|posted (in|by)|more from|trending|popular|most read|"
    r"see also|also read|email|facebook|twitter|linkedin|instagram|youtube|pinterest|reply)\b",
    re.IGNORECASE,
)
_CREDIT = re.compile(
    r"\b(photo|image|picture|credit|courtesy|source)s?\b ?(by|:|credit)|©|getty images|shutterstock|unsplash",
    re.IGNORECASE,
)
_CALL_TO_ACTION = re.compile(
    r"(shop|get|learn|try|sign|download|browse|check out|find|use our|visit|join|subscribe|book|buy|"
    r"order|click|discover|explore|start|register|read)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\b(19|20)\d\d\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)]*$")
_TAGS = (
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "table",
    "blockquote",
    "pre",
    "div",
    "dl",
    "hr",
    "td",
)


def _link_density(block: Block) -> float:
    return block.link_chars / len(block.text) if block.text else 0.0


def _share(block: Block) -> float:
    return block.shared / block.shingle_total if block.shingle_total else 0.0


def block_features(page: PageBlocks) -> list[dict[str, float]]:
    blocks = page.blocks
    count = len(blocks)
    words = [len(block.tokens) for block in blocks]
    total_words = sum(words) or 1
    agreement = sum(b.shared for b in blocks) / max(1, sum(b.shingle_total for b in blocks))
    rows = []
    for index, block in enumerate(blocks):
        text = block.text
        tokens = block.tokens
        row = {
            "log_words": math.log1p(words[index]),
            "log_chars": math.log1p(len(text)),
            "link_density": _link_density(block),
            "log_links": math.log1p(block.links),
            "log_items": math.log1p(block.items),
            "second_opinion_share": _share(block),
            "position": index / max(1, count - 1),
            "first": float(index == 0),
            "last": float(index == count - 1),
            "from_end": min(count - 1 - index, 10) / 10,
            "from_start": min(index, 10) / 10,
            "word_share": words[index] / total_words,
            "log_blocks": math.log1p(count),
            "agreement": agreement,
            "log_page_words": math.log1p(total_words),
            "furniture": len(_FURNITURE.findall(text)) / (1 + len(tokens) / 10),
            "credit": float(bool(_CREDIT.search(text))),
            "call_to_action": float(bool(_CALL_TO_ACTION.match(text))),
            "date": float(bool(_DATE.search(text))),
            "sentence_end": float(bool(_SENTENCE_END.search(text))),
            "capitalised": sum(1 for t in tokens if t[:1].isupper()) / len(tokens) if tokens else 0.0,
            "digits": sum(c.isdigit() for c in text) / max(1, len(text)),
            "exclamation": float("!" in text),
            "shouted": float(text.isupper() and len(text) > 8),
            "byline": float(bool(re.match(r"(by|von|par|por|di)\b", text, re.IGNORECASE))),
            f"tag:{block.tag if block.tag in _TAGS else 'other'}": 1.0,
            "located": float(block.ancestors is not None),
        }
        for step, name in ((-1, "previous"), (1, "next")):
            neighbour = blocks[index + step] if 0 <= index + step < count else None
            row[f"{name}_link_density"] = _link_density(neighbour) if neighbour else 0.0
            row[f"{name}_second_opinion_share"] = _share(neighbour) if neighbour else 1.0
            row[f"{name}_heading"] = float(neighbour is not None and neighbour.tag in _TAGS[1:7])
        for ancestor in block.ancestors or ():
            row[f"ancestor_tag:{ancestor.tag}"] = 1.0
            if ancestor.role:
                row[f"role:{ancestor.role}"] = 1.0
            for word in ancestor.words:
                row[f"class:{word}"] = 1.0
                if ancestor.depth <= NEAR_LEVELS:
                    row[f"near_class:{word}"] = 1.0
        rows.append(row)
    return rows


# %% [markdown]
# ## Cross-validation grouped by site


# %%
def _fold(host: str) -> int:
    return int(hashlib.sha256(host.encode()).hexdigest(), 16) % FOLDS


def _scores(pages: Sequence[PageBlocks], keep: Sequence[Sequence[bool]]) -> tuple[float, float, float, int]:
    counts = [
        page_counts(
            page.truth,
            " ".join(t for block, kept in zip(page.blocks, mask, strict=True) if kept for t in block.tokens),
        )
        for page, mask in zip(pages, keep, strict=True)
    ]
    scores = aggregate(counts)
    return scores.precision, scores.recall, scores.f1, scores.pages


def cross_validated_probabilities(pages: Sequence[PageBlocks], model_name: str) -> list[list[float]]:
    """Per page and block, the probability that the block is the article's, from a model trained
    on the other folds' sites; class/id words seen on fewer than five training sites are ignored."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # type: ignore[import-not-found]
    from sklearn.feature_extraction import DictVectorizer  # type: ignore[import-not-found]
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-not-found]

    features = [block_features(page) for page in pages]
    probabilities: list[list[float]] = [[1.0] * len(page.blocks) for page in pages]
    for fold in range(FOLDS):
        train = [i for i, page in enumerate(pages) if _fold(page.host) != fold]
        test = [i for i, page in enumerate(pages) if _fold(page.host) == fold]
        sites: dict[str, set[str]] = {}
        for i in train:
            for row in features[i]:
                for name in row:
                    if name.startswith(("class:", "near_class:")):
                        sites.setdefault(name, set()).add(pages[i].host)
        rare = {name for name, hosts in sites.items() if len(hosts) < 5}

        def rows(indices: Iterable[int], rare: set[str] = rare) -> list[dict[str, float]]:
            return [{k: v for k, v in row.items() if k not in rare} for i in indices for row in features[i]]

        labels = [int(gain <= 0) for i in train for gain in pages[i].labels]  # 1: the article's
        weights = [abs(gain) * 1000 + 0.1 for i in train for gain in pages[i].labels]
        vectoriser = DictVectorizer(sparse=model_name == "logistic")
        x_train = vectoriser.fit_transform(rows(train))
        x_test = vectoriser.transform(rows(test))
        model = (
            LogisticRegression(C=0.1, max_iter=3000)
            if model_name == "logistic"
            else HistGradientBoostingClassifier(max_depth=4, max_iter=150, learning_rate=0.08)
        )
        model.fit(x_train, labels, sample_weight=weights)
        predicted = iter(model.predict_proba(x_test)[:, 1])
        for i in test:
            probabilities[i] = [float(next(predicted)) for _ in pages[i].blocks]
    return probabilities


def report(pages: Sequence[PageBlocks]) -> None:
    groups = {
        "all pages": list(range(len(pages))),
        "article pages": [
            i
            for i, page in enumerate(pages)
            if page.page_type == "article" or page.source.startswith("article")
        ],
    }
    for source in sorted({page.source for page in pages}):
        groups[source] = [i for i, page in enumerate(pages) if page.source == source]

    def line(label: str, keep: Sequence[Sequence[bool]]) -> str:
        cells = []
        for indices in groups.values():
            p, r, f, _ = _scores([pages[i] for i in indices], [keep[i] for i in indices])
            cells.append(f"P {p:.4f} R {r:.4f} F1 {f:.4f}")
        return f"{label:<22}" + " | ".join(cells)

    print(" " * 22 + " | ".join(f"{name} ({len(ix)})".ljust(29) for name, ix in groups.items()))
    print(line("every block kept", [[True] * len(page.blocks) for page in pages]))
    oracle = [[gain <= 0 for gain in page.labels] for page in pages]
    print(line("oracle (labels)", oracle))
    for model_name in ("logistic", "boosted-trees"):
        probabilities = cross_validated_probabilities(pages, model_name)
        for threshold in THRESHOLDS:
            keep = [[q >= threshold for q in page_probabilities] for page_probabilities in probabilities]
            print(line(f"{model_name} < {threshold}", keep))


# %% [markdown]
# ## Run


# %%
def load_dev_pages(folders: Sequence[str], exclude_validation_of: Sequence[str]) -> list[PageBlocks]:
    excluded = {
        hashlib.sha256(page.html.encode()).hexdigest()
        for folder in exclude_validation_of
        for page in load_set(folder).pages
        if page.part == "validation"
    }
    pages: list[PageBlocks] = []
    for folder in folders:
        page_set = load_set(folder)
        name = f"{page_set.layout}:{Path(folder).name}"
        dev = [
            p
            for p in page_set.pages
            if p.part == "dev" and hashlib.sha256(p.html.encode()).hexdigest() not in excluded
        ]
        for number, page in enumerate(dev, 1):
            blocks = page_blocks(page, name)
            if blocks is not None:
                pages.append(blocks)
            if number % 100 == 0:
                print(f"{name}: {number}/{len(dev)} dev pages read", file=sys.stderr)
    return pages


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__ or "", formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", action="append", required=True, help="a benchmark folder; its dev part is read"
    )
    parser.add_argument(
        "--exclude-validation-of",
        action="append",
        default=[],
        metavar="PATH",
        help="leave out pages whose HTML is a validation page of this set",
    )
    arguments = parser.parse_args(argv)
    pages = load_dev_pages(arguments.data, arguments.exclude_validation_of)
    print(f"{len(pages)} pages, {sum(len(p.blocks) for p in pages):,} blocks", file=sys.stderr)
    report(pages)


if __name__ == "__main__" and "ipykernel" not in sys.modules:
    main()
