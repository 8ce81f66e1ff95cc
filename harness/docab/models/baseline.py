"""``baseline/keyword``: a deterministic offline policy that drives the same tool loop as a model.

It is a floor, not a model result (``is_baseline = True``; reports label it so). It lets the
whole pipeline — tools, MCP servers, budget, records, report — run without an API key, and it
uses each arm's tools the way a simple agent would:

1. search: ``index_md`` on the document when the arm offers it (md-vision), then ``grep`` for
   the question's keywords;
2. read: the best-matching parts by keyword overlap with the question — whole pages through
   md-vision's ``read_md_with_images`` when offered (pages located with the index), else
   windows of ``document.md`` around the best grep hits through ``read_file``;
3. answer: the best-matching line read, reduced to a span shaped by the question (a number for
   "how many", a percentage, a year, the value after a ``label:``, ...), or "Not answerable" when
   nothing read matches well enough. Submitted through ``submit_answer`` (or as the final text
   under the extraction protocol).

It never looks at images. Its token counts are estimates (characters / 4 of what it was sent and
what it wrote, plus a fixed cost per image), marked ``estimated`` in the raw usage, so a demo
shows how much context each arm's tools produce.

The state of the episode is read from the conversation itself, so the policy holds no state
between calls and one instance serves any number of samples concurrently.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from docab.agent.answer import NOT_ANSWERABLE, SUBMIT_TOOL_NAME
from docab.agent.budget import CHARS_PER_TOKEN, DEFAULT_IMAGE_TOKENS
from docab.agent.evidence import DOCUMENT_FILE, PAGE_HEADING
from docab.agent.messages import Image, Message, ToolCall, ToolSpec
from docab.log.usage import Usage
from docab.models.base import Turn
from docab.models.config import ModelConfig, ModelConfigError

READS_PER_SAMPLE = 2
WINDOW_BEFORE, WINDOW_LINES = 6, 30
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
_NUMBERED = re.compile(r"^\s*\d+\t")
_INDEX_ROW = re.compile(r"^(?P<heading>#{1,6}\s.*?)\t(?P<line>\d+)\t\d+\t\d+\s*$")


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

    def ok_text(self, name: str) -> list[str]:
        return [self.results.get(c.id, "") for c in self.made(name) if c.id not in self.errors]


def grep_hits(texts: Sequence[str]) -> list[tuple[int, str]]:
    hits = []
    for text in texts:
        for line in text.splitlines():
            match = _GREP_HIT.match(line)
            if match and match.group("path").endswith("document.md"):
                hits.append((int(match.group("line")), match.group("text")))
    return hits


def index_pages(texts: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first line, page number or 0, heading) rows from md-vision index output."""
    rows = []
    for text in texts:
        for line in text.splitlines():
            match = _INDEX_ROW.match(line.strip())
            if match:
                heading = match.group("heading").strip()
                page = PAGE_HEADING.match(heading)
                rows.append((int(match.group("line")), int(page.group(1)) if page else 0, heading))
    return sorted(rows)


def page_at(line: int, rows: list[tuple[int, int, str]]) -> int | None:
    page = None
    for start, number, _ in rows:
        if start > line:
            break
        if number:
            page = number
    return page


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


def _read_lines(history: _History, read_tools: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for name in read_tools:
        for text in history.ok_text(name):
            for line in text.splitlines():
                line = _NUMBERED.sub("", line)
                if line.strip() and not line.startswith("[") and not PAGE_HEADING.match(line.strip()):
                    lines.append(line)
    return lines


def _estimate_tokens(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    chars = len(system) + sum(len(json.dumps(t.input_schema)) + len(t.description) for t in tools)
    images = 0
    for message in messages:
        chars += len(message.text) + sum(len(json.dumps(c.arguments)) for c in message.tool_calls)
        images += sum(1 for b in message.blocks if isinstance(b, Image))
    return math.ceil(chars / CHARS_PER_TOKEN) + images * DEFAULT_IMAGE_TOKENS


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
        text, calls, step = self.decide(question_of(messages), _History.of(messages), offered)
        turn_no = sum(1 for m in messages if m.role == "assistant") + 1
        calls = tuple(ToolCall(f"call_{turn_no}_{i}", name, args) for i, (name, args) in enumerate(calls))
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
    ) -> tuple[str, list[tuple[str, dict]], str]:
        """The next action: (text, [(tool, arguments)], step name). Pure."""
        weights = keywords(question)
        if "index_md" in offered and not history.made("index_md"):
            return "", [("index_md", {"uri": DOCUMENT_FILE})], "index"
        if "grep" in offered and not history.made("grep"):
            args = {"pattern": grep_pattern(weights), "path": "document", "glob": "*.md", "ignore_case": True}
            return "", [("grep", {**args, "max_matches": 200})], "search"
        hits = grep_hits(history.ok_text("grep"))
        read_tool = "read_md_with_images" if "read_md_with_images" in offered else "read_file"
        if hits and not history.made(read_tool) and read_tool in offered:
            reads = self._plan_reads(hits, weights, history, read_tool)
            if reads:
                return "", reads, "read"
        return self._answer(question, weights, history, offered)

    def _plan_reads(
        self, hits: list[tuple[int, str]], weights: dict[str, float], history: _History, read_tool: str
    ) -> list[tuple[str, dict]]:
        ranked = sorted(hits, key=lambda h: (-line_score(h[1], weights), h[0]))
        if read_tool == "read_md_with_images":
            rows = index_pages(history.ok_text("index_md"))
            pages: list[int] = []
            for line, _ in ranked:
                page = page_at(line, rows)
                if page is not None and page not in pages:
                    pages.append(page)
                if len(pages) == READS_PER_SAMPLE:
                    break
            if pages:
                return [
                    (read_tool, {"uri": DOCUMENT_FILE, "section": f"## Page {page}", "max_images": 0})
                    for page in pages
                ]
            read_tool = "read_file"  # no usable index: fall back to windows of the file
        windows: list[int] = []
        for line, _ in ranked:
            start = max(1, line - WINDOW_BEFORE)
            if all(abs(start - other) >= WINDOW_LINES for other in windows):
                windows.append(start)
            if len(windows) == READS_PER_SAMPLE:
                break
        return [
            ("read_file", {"path": DOCUMENT_FILE, "offset": start, "limit": WINDOW_LINES})
            for start in windows
        ]

    def _answer(
        self, question: str, weights: dict[str, float], history: _History, offered: set[str]
    ) -> tuple[str, list[tuple[str, dict]], str]:
        lines = _read_lines(history, ("read_md_with_images", "read_file"))
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
        if best_score >= ANSWERABLE_SCORE:
            cell = table_cell(lines, best_index, question) if wants_number(question) else None
            answer, status = cell or shape_answer(question, best, weights), "answered"
        else:
            answer, status = NOT_ANSWERABLE, "not_answerable"
        if SUBMIT_TOOL_NAME in offered:
            args = {"status": status, "answer": "" if status == "not_answerable" else answer}
            return "", [(SUBMIT_TOOL_NAME, args)], "answer"
        return answer, [], "answer"
