"""``baseline/keyword``: a deterministic offline policy that drives the same tool loop as a model.

It is a floor, not a model result (``is_baseline = True``; reports label it so). It lets the
whole pipeline — tools, MCP servers, budget, records, report — run without an API key, and it is
built so that an offline A/B is a fair retrieval comparison: every arm runs the same search,
chooses the same regions of the document, reads the same number of lines, and stops by the same
rule; an arm's tools decide only *how* a chosen region is read, so a difference between arms
measures what the tools show and what that costs, not choices the policy made differently.

The algorithm (one step per model turn; the state is read back from the conversation):

1. **search** (every arm): one ``grep`` of ``document/`` for the question's keywords
   (:func:`grep_pattern`, case-insensitive, at most :data:`SEARCH_MATCHES` hits).
2. **structure** (every arm): one ``grep`` of ``document/document.md`` for its level-1 and
   level-2 headings (``# Title``, ``## Page N``), which cut the document into *blocks*; in the
   converted corpus each page is one block. (md-vision's ``index_md`` would give the same lines
   to one arm only, so the policy does not use it: the search stays identical.)
3. **read** (every arm, one turn): the hits ranked by keyword overlap with the question choose up
   to :data:`READS_PER_STEP` regions of at most :data:`REGION_LINES` lines each
   (:func:`plan_regions`): a hit's whole block when the block is known to fit, else a window of
   ``REGION_LINES`` lines from :data:`LINES_BEFORE_HIT` lines above the hit, kept inside its
   block (the last block's end is unknown, so it is always read as a window). A hit on a
   level-1/2 heading itself (the title, ``## Page N``) chooses nothing, and a region never
   overlaps one already chosen. Each region is read with the arm's tool for reading
   (:func:`read_call`):

   - filesystem only: ``read_file`` with ``offset`` and ``limit`` (numbered lines);
   - with md-vision: ``read_md_with_images`` with ``section = "## Page N"`` when the region is
     exactly one page's block (a section runs to the next heading of its level or higher, which
     is that block's end, so it is the same lines: in the converted corpus, whose converter
     escapes every other block marker, the grep of step 2 finds exactly the headings md-vision
     parses), else with ``line_range``; ``max_images = 0``, because the policy never looks at
     images and an image would cost one arm budget the other does not spend.

   Both calls show the same lines of ``document.md``; only their format and cost differ. The
   reading budget is in lines, not characters, because the policy cannot know how long lines it
   has not read are; the same lines cost each arm what its tool's format costs (``read_file``
   numbers each line; md-vision adds a note about images it did not inline), and the output
   budget cuts both alike.
4. **answer**: the best-matching line shown, reduced to a span shaped by the question (a number
   for "how many", a percentage, a year, the value after a ``label:``, ...), or "Not answerable"
   when nothing shown matches well enough; when nothing was read, the search hits themselves.
   Lines that are the tools' own notes (starting with ``[`` or ``Note:``) are skipped in every
   arm alike. Submitted through ``submit_answer`` (or as the final text under the extraction
   protocol).

Stopping rule: each step runs at most once and a call identical to an earlier one is never made
(:meth:`KeywordBaseline.decide` drops it and moves on), so a sample takes four turns — search,
structure, read, answer (two more at most if the answer tool refuses its answers) — and never
reaches a turn limit by repetition. An arm without
``grep`` cannot search and answers "Not answerable" at once.

It never looks at images. Its token counts are estimates (characters / 4 of what it was sent and
what it wrote, plus each image's cost under the default image rule of ``docab.agent.budget``),
marked ``estimated`` in the raw usage, so a demo shows how much context each arm's tools produce.

The policy holds no state between calls, so one instance serves any number of samples concurrently.

Why one module: the policy is one algorithm whose steps read the state they need back from the
conversation, and its fairness rests on every arm going through the same functions; one module
keeps that checkable in one reading.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from docab.messages import Image, Message, ToolCall, ToolSpec, Turn
from docab.models.config import ModelConfig, ModelConfigError
from docab.protocol import DOCUMENT_FILE, NOT_ANSWERABLE, PAGE_HEADING, SUBMIT_TOOL_NAME
from docab.tokens import CHARS_PER_TOKEN, image_tokens
from docab.usage import Usage

SEARCH_MATCHES = 200  # keyword hits the search asks for
STRUCTURE_MATCHES = 500  # level-1/2 headings the structure step asks for (grep's maximum)
READS_PER_STEP = 2  # regions read in the read step
REGION_LINES = 60  # the reading budget of one region, in lines of document.md
LINES_BEFORE_HIT = 10  # a window starts this many lines above its hit (within the hit's block)
ANSWERABLE_SCORE = 0.5  # share of the question's keyword weight the best line must match

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "many",
        "me",
        "more",
        "most",
        "much",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "document",
        "report",
        "page",
        "pages",
        "according",
        "shown",
        "show",
        "given",
        "mentioned",
        "list",
        "name",
        "number",
        "total",
        "value",
        "many",
        "please",
        "tell",
        "state",
        "stated",
    ]
)
_WORD = re.compile(r"[A-Za-z][A-Za-z\-']+|\d+(?:[.,]\d+)*")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\$?\d[\d,]*(?:\.\d+)?%?")
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_PERCENT = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?\s?%")
_GREP_HIT = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):(?P<text>.*)$")
_NUMBERED = re.compile(r"^\s*\d+\t(?P<text>.*)$")
STRUCTURE_PATTERN = r"^#{1,2}\s"  # the headings that end an md-vision "## " section
_GREP_CAPPED = "[stopped at max_matches="
_TOOL_NOTE = (
    "[",
    "Note:",
)  # lines the tools add (read_file's "[lines ...]", md-vision's notes, budget notices)


def _stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


_FOCUS = re.compile(
    r"\b(?:how many|how much|number of|what(?: is| was| are| were)? the|which|what)\s+((?:[A-Za-z][\w\-']*\s*){1,2})",
    re.IGNORECASE,
)
FOCUS_BOOST = 3.0


def keywords(question: str) -> dict[str, float]:
    """Content words of the question (stemmed) with weights.

    Longer words weigh more, numbers more still, and the words right after "how many", "what is
    the", ... (what the question asks about: "employees" in "how many employees") most.
    """
    weights: dict[str, float] = {}
    for token in _WORD.findall(question):
        stem = _stem(token)
        if stem in STOPWORDS or (len(stem) < 3 and not stem.isdigit()):
            continue
        weight = 2.0 if stem[0].isdigit() else 1.0 + min(len(stem), 10) / 10
        weights[stem] = max(weights.get(stem, 0.0), weight)
    for match in _FOCUS.finditer(question):
        for token in _WORD.findall(match.group(1)):
            stem = _stem(token)
            if stem in weights:
                weights[stem] *= FOCUS_BOOST
    return weights


QUANTITY_CUES = (
    "how many",
    "how much",
    "number of",
    "how long",
    "how old",
    "how far",
    "count",
    "percent",
    "percentage",
    "proportion",
    "share of",
    "rate",
    "revenue",
    "price",
    "fee",
    "cost",
    "amount",
    "total",
    "distance",
    "per share",
)


def wants_number(question: str) -> bool:
    q = question.lower()
    return any(cue in q for cue in QUANTITY_CUES) or bool(re.search(r"\b(what|which) year\b|\bwhen\b", q))


def focus_stems(weights: dict[str, float]) -> set[str]:
    """The words the question asks about (boosted by ``keywords``)."""
    return {stem for stem, weight in weights.items() if weight >= FOCUS_BOOST}


def line_score(line: str, weights: dict[str, float]) -> float:
    """Share of the keyword weight present in ``line``."""
    if not weights:
        return 0.0
    present = {_stem(t) for t in _WORD.findall(line)}
    return sum(w for k, w in weights.items() if k in present) / sum(weights.values())


def grep_pattern(weights: dict[str, float]) -> str:
    """An alternation of the keywords, longest first, each allowed a plural or inflected ending."""
    words = sorted(weights, key=lambda k: (-weights[k], -len(k), k))[:12]
    return "|".join(re.escape(w) for w in words) if words else r"\w"


def question_of(messages: Sequence[Message]) -> str:
    first = next((m for m in messages if m.role == "user"), None)
    text = first.text if first else ""
    for line in reversed(text.splitlines()):
        if line.strip().lower().startswith("question:"):
            return line.split(":", 1)[1].strip()
    return text.strip()


@dataclass
class _History:
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)  # call id -> shown text
    errors: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, messages: Sequence[Message]) -> _History:
        history = cls()
        for message in messages:
            if message.role == "assistant":
                history.calls.extend(message.tool_calls)
            elif message.role == "tool" and message.tool_call_id:
                history.results[message.tool_call_id] = message.text
                if message.is_error:
                    history.errors.add(message.tool_call_id)
        return history

    def made(self, name: str) -> list[ToolCall]:
        return [c for c in self.calls if c.name == name]

    def made_call(self, name: str, arguments: dict[str, Any]) -> bool:
        key = _call_key(name, arguments)
        return any(_call_key(c.name, c.arguments) == key for c in self.calls)

    def ok_text(self, name: str, where: Callable[[ToolCall], bool] = lambda _: True) -> list[str]:
        return [self.results.get(c.id, "") for c in self.made(name) if c.id not in self.errors and where(c)]


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    return name + json.dumps(arguments, sort_keys=True)


def grep_hits(texts: Sequence[str]) -> list[tuple[int, str]]:
    hits = []
    for text in texts:
        for line in text.splitlines():
            match = _GREP_HIT.match(line)
            if match and match.group("path").endswith("document.md"):
                hits.append((int(match.group("line")), match.group("text")))
    return hits


@dataclass(frozen=True)
class Block:
    """Lines of ``document.md`` from one level-1/2 heading to the line before the next one."""

    first: int
    last: int | None  # None: runs to the end of the file, whose length the policy does not know
    page: int | None = None  # the block is ``## Page N`` (its heading unique in the document)
    heading: bool = True  # ``first`` is its heading (not so for lines before the first heading)


def blocks_of(structure: Sequence[tuple[int, str]]) -> list[Block]:
    """The blocks that level-1/2 headings (line, text) cut the document into. The last block's end
    is unknown (also when the structure search stopped at its cap: hits below the last heading it
    listed then fall in that block and are read as windows)."""
    headings = sorted(structure)
    pages = [int(m.group(1)) for _, text in headings if (m := PAGE_HEADING.match(text.strip()))]
    unique_pages = {page for page in pages if pages.count(page) == 1}
    blocks: list[Block] = []
    if not headings or headings[0][0] > 1:
        blocks.append(Block(1, headings[0][0] - 1 if headings else None, heading=False))
    for index, (line, text) in enumerate(headings):
        last = headings[index + 1][0] - 1 if index + 1 < len(headings) else None
        match = PAGE_HEADING.match(text.strip())
        page = int(match.group(1)) if match and int(match.group(1)) in unique_pages else None
        blocks.append(Block(line, last, page))
    return blocks


@dataclass(frozen=True)
class Region:
    """Lines ``first`` to ``last`` of ``document.md`` that one read shows; ``page`` when the region
    is exactly the block of page ``page``."""

    first: int
    last: int
    page: int | None = None

    def overlaps(self, other: Region) -> bool:
        return self.first <= other.last and other.first <= self.last


def region_for(hit: int, blocks: Sequence[Block]) -> Region:
    """The region a hit on line ``hit`` chooses (see the module docstring, step 3)."""
    block = next((b for b in reversed(blocks) if b.first <= hit), Block(1, None))
    if block.last is not None and block.last - block.first + 1 <= REGION_LINES:
        return Region(block.first, block.last, block.page)
    first = max(block.first, hit - LINES_BEFORE_HIT)
    last = first + REGION_LINES - 1
    if block.last is not None and last > block.last:
        last = block.last
        first = max(block.first, last - REGION_LINES + 1)
    return Region(first, last)


def plan_regions(
    hits: Sequence[tuple[int, str]], weights: dict[str, float], blocks: Sequence[Block]
) -> list[Region]:
    """Up to READS_PER_STEP regions, best hit first, none overlapping another. A hit on a level-1/2
    heading (the title, ``## Page N``) says nothing about where the content is and chooses nothing."""
    structure = {block.first for block in blocks if block.heading}
    ranked = sorted(hits, key=lambda h: (-line_score(h[1], weights), h[0]))
    regions: list[Region] = []
    for line, _ in ranked:
        if line in structure:
            continue
        region = region_for(line, blocks)
        if any(region.overlaps(other) for other in regions):
            continue
        regions.append(region)
        if len(regions) == READS_PER_STEP:
            break
    return regions


def read_call(region: Region, offered: set[str]) -> tuple[str, dict[str, Any]]:
    """How an arm reads a region: md-vision's reader when offered, else ``read_file``; the same lines."""
    if "read_md_with_images" in offered:
        if region.page is not None:
            return "read_md_with_images", {
                "uri": DOCUMENT_FILE,
                "section": f"## Page {region.page}",
                "max_images": 0,
            }
        return (
            "read_md_with_images",
            {"uri": DOCUMENT_FILE, "line_range": [region.first, region.last], "max_images": 0},
        )
    return "read_file", {
        "path": DOCUMENT_FILE,
        "offset": region.first,
        "limit": region.last - region.first + 1,
    }


def _numbers_in(text: str) -> set[str]:
    return {n.strip("$%").replace(",", "") for n in _NUMBER.findall(text)}


def _cells(line: str) -> list[str]:
    text = line.strip().strip("|")
    return [c.strip() for c in text.split("|")] if "|" in text else text.split()


def table_cell(lines: Sequence[str], index: int, question: str) -> str | None:
    """When ``lines[index]`` is a table row and a header row above it names a column the question
    mentions (a year, a label), the row's cell in that column."""
    row = _cells(lines[index])
    if len(row) < 3 or not any(_NUMBER.fullmatch(c) for c in row[1:]):
        return None
    asked = {_stem(t) for t in _WORD.findall(question)}
    for header_line in reversed(lines[max(0, index - 12) : index]):
        header = _cells(header_line)
        if len(header) != len(row):
            continue
        columns = [i for i, cell in enumerate(header) if i > 0 and _stem(cell) in asked]
        if len(columns) == 1:
            return row[columns[0]]
    return None


def _nearest(pattern: re.Pattern[str], text: str, excluded: set[str], focus: set[str]) -> str | None:
    """The match of ``pattern`` in ``text`` nearest to a focus word (the first one without focus)."""
    found = [
        m for m in pattern.finditer(text) if m.group(0).strip().strip("$%").replace(",", "") not in excluded
    ]
    if not found:
        return None
    anchors = [m.start() for m in _WORD.finditer(text) if _stem(m.group(0)) in focus]
    if not anchors:
        return found[0].group(0).strip()
    best = min(found, key=lambda m: min(abs(m.start() - a) for a in anchors))
    return best.group(0).strip()


def shape_answer(question: str, line: str, weights: dict[str, float]) -> str:
    """A short answer span from the best line, shaped by what the question asks for."""
    q = question.lower()
    value = line.strip().strip("|").strip()
    if ":" in value:
        label, rest = value.split(":", 1)
        if rest.strip() and line_score(label, weights) > 0:
            value = rest.strip()
    excluded = _numbers_in(question)
    focus = focus_stems(weights)

    if re.match(r"^(is|are|does|do|did|was|were|can|has|have|will)\b", q):
        return "Yes"
    if re.search(r"\b(called|named)\b", q):
        named = re.search(r"\b(?:called|named)\s+(.+)", value, re.IGNORECASE)
        if named:
            return " ".join(named.group(1).rstrip(".").split()[:8])
    if any(w in q for w in ("percent", "percentage", "%", "proportion", "share of", "rate")):
        found = _nearest(_PERCENT, value, excluded, focus) or _nearest(_NUMBER, value, excluded, focus)
        if found:
            return found.replace(" ", "")
    if re.search(r"\b(what|which) year\b|\bwhen\b", q):
        found = _nearest(_YEAR, value, excluded, focus)
        if found:
            return found
    if wants_number(question):
        found = _nearest(_NUMBER, value, excluded, focus)
        if found:
            return found.strip("$").replace(",", "") if "how many" in q else found.strip("$")
    words = value.rstrip(".").split()
    return " ".join(words[:12])


def shown_lines(history: _History) -> list[str]:
    """The document lines the read step showed, the same in every arm: ``read_file``'s numbered
    lines without their numbers, md-vision's text as it is; the tools' own notes skipped."""
    lines: list[str] = []
    for text in history.ok_text("read_file"):
        lines += [m.group("text") for line in text.splitlines() if (m := _NUMBERED.match(line))]
    for text in history.ok_text("read_md_with_images"):
        lines += text.splitlines()
    return [
        line
        for line in lines
        if line.strip() and not line.lstrip().startswith(_TOOL_NOTE) and not PAGE_HEADING.match(line.strip())
    ]


def _estimate_tokens(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    chars = len(system) + sum(len(json.dumps(t.input_schema)) + len(t.description) for t in tools)
    images = 0
    for message in messages:
        chars += len(message.text) + sum(len(json.dumps(c.arguments)) for c in message.tool_calls)
        images += sum(image_tokens(b) for b in message.blocks if isinstance(b, Image))
    return math.ceil(chars / CHARS_PER_TOKEN) + images


POLICIES = ("keyword",)


def build(config: ModelConfig) -> KeywordBaseline:
    """The entry point ``docab.models.build_model`` uses for ``baseline/<policy>``."""
    if config.model_id not in POLICIES:
        raise ModelConfigError(
            f"unknown baseline policy {config.model_id!r} in {config.name!r}; offline policies: {', '.join(POLICIES)}"
        )
    return KeywordBaseline(config.name)


class KeywordBaseline:
    """The offline policy behind the Model protocol; see the module docstring."""

    name = "baseline/keyword"
    supports_images = False
    is_baseline = True

    def __init__(self, name: str = "baseline/keyword") -> None:
        self.name = name

    async def generate(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
    ) -> Turn:
        began = time.perf_counter()
        offered = {t.name for t in tools}
        text, planned, step = self.decide(question_of(messages), _History.of(messages), offered)
        turn_no = sum(1 for m in messages if m.role == "assistant") + 1
        calls = tuple(ToolCall(f"call_{turn_no}_{i}", name, args) for i, (name, args) in enumerate(planned))
        written = len(text) + sum(len(json.dumps(c.arguments)) for c in calls)
        usage = Usage(
            input_uncached=_estimate_tokens(system, messages, tools),
            output=math.ceil(written / 4),
            model=self.name,
            raw={"estimated": "characters / 4; an offline policy, no model was called"},
        )
        return Turn(
            text=text,
            tool_calls=calls,
            usage=usage,
            latency_s=time.perf_counter() - began,
            stop_reason="tool_use" if calls else "end_turn",
            raw={"policy": self.name, "step": step},
        )

    def decide(
        self, question: str, history: _History, offered: set[str]
    ) -> tuple[str, list[tuple[str, dict[str, Any]]], str]:
        """The next action: (text, [(tool, arguments)], step name). Pure; see the module docstring."""
        weights = keywords(question)
        for step, calls in self._steps(weights, history, offered):
            fresh = [(name, args) for name, args in calls if not history.made_call(name, args)]
            if fresh:
                return "", fresh, step
        return self._answer(question, weights, history, offered)

    def _steps(
        self, weights: dict[str, float], history: _History, offered: set[str]
    ) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
        """The tool steps still to take, in order; a step already taken is left out."""
        if "grep" not in offered:
            return []
        search = {
            "pattern": grep_pattern(weights),
            "path": "document",
            "glob": "*.md",
            "ignore_case": True,
            "max_matches": SEARCH_MATCHES,
        }
        structure = {"pattern": STRUCTURE_PATTERN, "path": DOCUMENT_FILE, "max_matches": STRUCTURE_MATCHES}
        steps: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
            ("search", [("grep", search)]),
            ("structure", [("grep", structure)]),
        ]
        if any(history.made(name) for name in ("read_file", "read_md_with_images")):
            return steps  # the read step was taken: one read turn per sample
        hits = grep_hits(history.ok_text("grep", lambda c: c.arguments.get("pattern") != STRUCTURE_PATTERN))
        headings = grep_hits(
            history.ok_text("grep", lambda c: c.arguments.get("pattern") == STRUCTURE_PATTERN)
        )
        if hits and history.made_call("grep", structure):
            regions = plan_regions(hits, weights, blocks_of(headings))
            steps.append(("read", [read_call(region, offered) for region in regions]))
        return steps

    def _answer(
        self, question: str, weights: dict[str, float], history: _History, offered: set[str]
    ) -> tuple[str, list[tuple[str, dict[str, Any]]], str]:
        lines = shown_lines(history)
        if not lines:  # nothing read: fall back to the search hits themselves
            lines = [text for _, text in grep_hits(history.ok_text("grep"))]
        best_score, best, best_index = 0.0, "", -1
        excluded = _numbers_in(question)
        for index, line in enumerate(lines):
            if line.lstrip().startswith("#") or line.lstrip().startswith("!["):
                continue  # headings and image references name things; they rarely hold answers
            if wants_number(question) and not (_numbers_in(line) - excluded):
                continue
            score = line_score(line, weights)
            if score > best_score:
                best_score, best, best_index = score, line, index
        answer = ""
        if best_score >= ANSWERABLE_SCORE:
            cell = table_cell(lines, best_index, question) if wants_number(question) else None
            answer = (cell or shape_answer(question, best, weights)).strip()
        status = "answered" if answer else "not_answerable"
        if SUBMIT_TOOL_NAME not in offered:
            return answer or NOT_ANSWERABLE, [], "answer"
        submission = {"status": status, "answer": answer}
        if history.made_call(SUBMIT_TOOL_NAME, submission):  # it was refused: never send it twice
            submission = {"status": "not_answerable", "answer": ""}
            if history.made_call(SUBMIT_TOOL_NAME, submission):
                return NOT_ANSWERABLE, [], "answer"
        return "", [(SUBMIT_TOOL_NAME, submission)], "answer"
