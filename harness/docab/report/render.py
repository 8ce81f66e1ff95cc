"""The report summary as tables: one layout, rendered as markdown or as a rich terminal display.

``sections(summary)`` decides what is shown (titles, headers, rows, notes); the two renderers only
format. They read the typed summary (``docab.report.schema.Summary``) built by
``docab.report.summary.build_report``.

Why one module: the layout (``sections``) and its two renderers change together; a new row,
column or note is one edit here, and apart each table's shape would live in two files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from docab.log.manifest import SessionVersions
from docab.report.schema import (
    ArmSummary,
    BreakdownDifference,
    Comparison,
    Estimate,
    Plan,
    PlanSize,
    PriceRow,
    Projected,
    Ratio,
    ReferenceRow,
    Spread,
    Summary,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from docab.report.gate import Check

METHOD_NOTE = (
    "Intervals are 95 %, with documents as clusters. Arm accuracy and evidence recall: Clopper-Pearson "
    "on the Korn-Graubard effective sample size below 300 questions, else the cluster-robust t. F1, "
    "evidence precision and every B - A difference: the cluster-robust t (CR3 variance, Bell-McCaffrey "
    "degrees of freedom; ratios linearised) from 30 documents up; below 30, the cluster sign-flip "
    "test (exact up to 14 documents; no interval below 6), whose p-value never grows as a result "
    "gets uniformly stronger; both calibrated by simulation (docab calibrate). Paired test: McNemar clustered by document; plain McNemar ignores documents "
    "and is shown only labelled so. Epochs are averaged per question first; errors, timeouts and "
    "limits score 0 (intention-to-treat). Tokens count every role per question."
)


@dataclass
class Section:
    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


# -- formatting -------------------------------------------------------------------------------------------

Format = Callable[[float | None], str]
"""A formatter: a number as text, "–" for an undefined one."""


def pct(value: float | None) -> str:
    return f"{value * 100:.1f} %" if _ok(value) else "–"


def _ok(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def with_interval(cell: Estimate | None, fmt: Format = pct) -> str:
    if cell is None or not _ok(cell.value):
        return "–"
    if _ok(cell.low) and _ok(cell.high):
        return f"{fmt(cell.value)} [{fmt(cell.low)}, {fmt(cell.high)}]"
    return fmt(cell.value)


def points(value: float | None) -> str:
    return f"{value * 100:+.1f}" if _ok(value) else "–"


def difference(cell: Estimate | BreakdownDifference | None, fmt: Format = points, unit: str = " pts") -> str:
    if cell is None or not _ok(cell.value):
        return "–"
    text = f"{fmt(cell.value)}{unit}"
    if _ok(cell.low) and _ok(cell.high):
        text += f" [{fmt(cell.low)}, {fmt(cell.high)}]"
    return text


def count(value: float | None) -> str:
    if not _ok(value):
        return "–"
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.2f}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:.1f}k"
    if magnitude >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.1f}"


def signed_count(value: float | None) -> str:
    return ("+" if _ok(value) and value > 0 else "") + count(value)


def seconds(value: float | None) -> str:
    """``12.3 s``; under a second in milliseconds (``43 ms``), so a short time never shows as
    ``0.0 s`` beside a ratio of it."""
    if not _ok(value):
        return "–"
    if value != 0 and abs(value) < 1:
        return f"{value * 1000:.0f} ms" if abs(value) >= 0.0005 else "under 1 ms"
    return f"{value:.1f} s"


def signed_seconds(value: float | None) -> str:
    if not _ok(value):
        return "–"
    if value != 0 and abs(value) < 1:
        return f"{value * 1000:+.0f} ms" if abs(value) >= 0.0005 else "±under 1 ms"
    return f"{value:+.1f} s"


def p_value(value: float | None) -> str:
    """``p = 0.013`` or ``p < 0.001``."""
    if not _ok(value):
        return "p –"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def median_p90(spread: Spread | None, fmt: Format = count) -> str:
    if spread is None or not spread.n:
        return "–"
    return f"{fmt(spread.median)} ({fmt(spread.p90)})"


def usd(value: float | None) -> str:
    """US dollars: ``$12.34``, ``$0.0123`` (three significant figures under a dollar), ``$0``."""
    if not _ok(value):
        return "–"
    if value == 0:
        return "$0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"${value:,.0f}"
    if magnitude >= 1:
        return f"${value:,.2f}"
    digits = max(2, 2 - math.floor(math.log10(magnitude)))
    return f"${value:.{digits}f}"


def signed_usd(value: float | None) -> str:
    return ("+" if _ok(value) and value > 0 else "-" if _ok(value) and value < 0 else "") + usd(
        abs(value) if _ok(value) else value
    )


PRICE_UNKNOWN = "price unknown"


def ratio(cell: Ratio) -> str:
    if not _ok(cell.value):
        return "–"
    text = f"×{cell.value:.2f}"
    if _ok(cell.low) and _ok(cell.high):
        text += f" [{cell.low:.2f}, {cell.high:.2f}]"
    return text


# -- layout --------------------------------------------------------------------------------------------------


def title(summary: Summary) -> str:
    heading = f"A/B report: run {summary.run_id or '?'}"
    return heading + (f" ({summary.label})" if summary.floor else "")


def sections(summary: Summary) -> list[Section]:
    arms = summary.arms
    result = [_arms_section(arms, summary.reference_rows), _answers_section(arms)]
    result += [
        _tokens_section(arms),
        _cost_section(arms, summary.prices),
        _time_section(arms),
        _tools_section(arms),
    ]
    by_name = {a.arm: a for a in arms}
    result += [_comparison_section(c, by_name) for c in summary.comparisons]
    if summary.breakdowns:
        result.append(_breakdown_section(summary))
    if summary.plan is not None:
        result.append(plan_section(summary.plan))
    if summary.version_changes:
        result.append(_versions_section(summary.version_changes))
    return result


def _versions_section(changed: Sequence[SessionVersions]) -> Section:
    """The sessions that ran with other package versions or docab code than the run's first."""
    return Section(
        "Sessions with other versions",
        ["Session", "Started", "Host", "Folder", "Differs from the first session"],
        [
            [
                str(s.number),
                s.session.started_at or "?",
                s.session.host or "?",
                s.part or "the run's own",
                ", ".join(change.describe() for change in s.changes),
            ]
            for s in changed
        ],
        [
            f"{len(changed)} session{'s' * (len(changed) != 1)} ran with other package versions or "
            "docab code than the run's first session: their samples may differ for that reason "
            "(the manifest's sessions record each)"
        ],
    )


def _models(arm: ArmSummary) -> str:
    text = ", ".join(arm.models)
    return f"{text} (floor)" if arm.floor else text


def _arms_section(arms: Sequence[ArmSummary], references: Sequence[ReferenceRow] = ()) -> Section:
    rows = []
    for arm in arms:
        status = arm.status
        rows.append(
            [
                arm.arm,
                _models(arm),
                f"{arm.questions} ({arm.documents} docs, {arm.epochs} ep.)",
                with_interval(arm.accuracy),
                with_interval(arm.answerable_accuracy),
                with_interval(arm.f1),
                f"{status.ok} / {status.error} / {status.timeout} / {status.limit}",
                with_interval(arm.evidence.recall) if arm.evidence else "–",
            ]
        )
    for reference in references:
        rows.append(
            [
                f"({reference.name})",
                "reference",
                str(reference.questions),
                pct(reference.accuracy),
                pct(reference.answerable_accuracy),
                pct(reference.f1),
                "",
                "",
            ]
        )
    notes = []
    for arm in arms:
        if arm.limits:
            hits = ", ".join(f"{k} {v}" for k, v in sorted(arm.limits.items()))
            notes.append(f"{arm.arm}: limits hit: {hits}.")
        if arm.retries:
            notes.append(f"{arm.arm}: {arm.retries} model-call retries.")
        if arm.extraction.of:
            notes.append(f"{arm.arm}: extraction failed: {arm.extraction.failed} of {arm.extraction.of}.")
        if arm.extraction.prose_fallback:
            total = arm.records or 1
            notes.append(
                f"{arm.arm}: prose fallback: {arm.extraction.prose_fallback} of {arm.records} answers "
                f"({arm.extraction.prose_fallback / total:.0%}) were prose taken through the answer extraction "
                "after the model never called submit_answer."
            )
    return Section(
        "Arms",
        [
            "arm",
            "model",
            "questions",
            "Acc [95 % CI]",
            "Acc answerable",
            "F1 [95 % CI]",
            "ok / error / timeout / limit",
            "evidence recall",
        ],
        rows,
        notes + [f"({r.name}): {r.description}." for r in references],
    )


def _answers_section(arms: Sequence[ArmSummary]) -> Section:
    """How each arm used "Not answerable", and how well it found the evidence pages."""
    rows = []
    for arm in arms:
        refusals = arm.not_answerable
        evidence = arm.evidence
        rows.append(
            [
                arm.arm,
                pct(refusals.answered),
                pct(refusals.correct),
                pct(refusals.found),
                with_interval(evidence.recall_seen) if evidence and evidence.recall_seen else "–",
                with_interval(evidence.precision) if evidence else "–",
                count(evidence.tokens_per_evidence_page) if evidence else "–",
            ]
        )
    return Section(
        "Answers and evidence",
        [
            "arm",
            '"Not answerable" given',
            "of which right",
            "unanswerable found",
            "evidence recall incl. search results",
            "evidence precision",
            "tokens per evidence page found",
        ],
        rows,
        [
            EVIDENCE_NOTE,
            "Evidence precision: the share of pages read that are evidence pages.",
        ],
    )


EVIDENCE_NOTE = (
    "A page counts as read only when a read call (read_file, an MCP reader) showed at least half "
    "its text, or its page image; search results (grep's matches and context lines) never make a "
    'page read. Evidence recall, the gate and the CI baseline use pages read; "evidence recall incl. '
    'search results" also counts pages that search results showed at least half of.'
)

ROLE_ORDER = ("agent", "tool-side", "extractor")


def _role_order(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def _tokens_section(arms: Sequence[ArmSummary]) -> Section:
    roles = sorted({r for a in arms for r in a.tokens.by_role}, key=_role_order)
    rows = []
    for arm in arms:
        tokens = arm.tokens
        definitions = tokens.tool_definition_tokens
        rows.append(
            [arm.arm, median_p90(tokens.total)]
            + [median_p90(tokens.by_role.get(role)) for role in roles]
            + [
                pct(tokens.cache_read_share),
                count(tokens.first_call_input.median) if tokens.first_call_input.n else "–",
                count(definitions) if definitions is not None else "not recorded",
            ]
        )
    headers = ["arm", "all roles", *roles, "cache read", "first call input", "tool definitions"]
    return Section(
        "Tokens per question (median (p90))",
        headers,
        rows,
        [
            "First call input: the input tokens of the first agent call (system prompt, tool definitions, "
            "question). Cache read: the share of input tokens read from the provider's prompt cache."
        ],
    )


def _cost_section(arms: Sequence[ArmSummary], prices: Sequence[PriceRow] = ()) -> Section:
    """What each arm cost in US dollars, per role, and (when a cache served answers) what caches
    saved; the prices as notes."""
    roles = sorted({r for a in arms if a.cost for r in a.cost.by_role}, key=_role_order)
    cached = any(a.cost is not None and a.cost.saved_by_cache > 0 for a in arms)
    rows = []
    for arm in arms:
        cost = arm.cost
        if cost is None:
            rows.append([arm.arm, "not recorded", *["" for _ in roles], *(["", ""] if cached else [])])
            continue
        unknown = bool(cost.unpriced)
        row = [
            arm.arm,
            PRICE_UNKNOWN if unknown else usd(cost.total),
            PRICE_UNKNOWN if unknown else median_p90(cost.per_question, usd),
            *[usd(cost.by_role[role]) if role in cost.by_role else "–" for role in roles],
        ]
        if cached:
            row += [usd(cost.saved_by_cache), PRICE_UNKNOWN if unknown else usd(cost.uncached_total)]
        rows.append(row)
    notes = [price_note(row) for row in prices]
    for arm in arms:
        if arm.cost and arm.cost.unpriced:
            notes.append(
                f"{arm.arm}: price unknown for {', '.join(arm.cost.unpriced)}: give it one with [model] price "
                "(USD per million tokens); the role columns count priced calls only."
            )
    notes.append(
        "Cost (USD): every role's tokens at the prices above (docab.pricing), per role in all"
        + (
            "; saved by cache: what answers served from a cache cost when first computed, not spent by "
            "this run; uncached cost: the two together."
            if cached
            else "."
        )
    )
    headers = ["arm", "Cost (USD)", "per question median (p90)", *roles]
    if cached:
        headers += ["saved by cache", "uncached cost"]
    return Section("Cost (USD)", headers, rows, notes)


def _unpriced(arm: ArmSummary | None) -> bool:
    return arm is not None and arm.cost is not None and bool(arm.cost.unpriced)


def price_note(row: PriceRow) -> str:
    """One model's price as a sentence citing its source and date."""
    if row.origin == "unknown":
        return f"{row.model}: price unknown (not in docab's price table; set [model] price)."
    if row.origin in ("offline policy", "local server"):
        return f"{row.model}: free ({row.origin})."
    figures = (
        f"${row.input:g} input, ${row.cached_input:g} cached input, ${row.cache_write:g} cache write, "
        f"${row.output:g} output per million tokens"
        if _ok(row.input) and _ok(row.cached_input) and _ok(row.cache_write) and _ok(row.output)
        else "no figures"
    )
    where = (
        "from the run's config"
        if row.origin == "config" and not row.source
        else f"source {row.source or 'not given'}, {row.date or 'undated'}"
    )
    note = f"; {row.note}" if row.note else ""
    return f"{row.model}: {figures} ({where}{note})."


def _time_section(arms: Sequence[ArmSummary]) -> Section:
    rows = [
        [
            arm.arm,
            median_p90(arm.time.wall_s, seconds),
            median_p90(arm.time.model_s, seconds),
            median_p90(arm.time.tool_s, seconds),
            count(arm.turns.median),
            count(arm.tool_calls.per_question.mean),
        ]
        for arm in arms
    ]
    return Section(
        "Time per question (median (p90))",
        ["arm", "wall", "model", "tools", "turns (median)", "tool calls (mean)"],
        rows,
        [],
    )


def _tools_section(arms: Sequence[ArmSummary]) -> Section:
    rows = []
    for arm in arms:
        for name, entry in arm.tool_calls.by_name.items():
            rows.append([arm.arm, name, count(entry.calls), seconds(entry.mean_s)])
    notes = [
        f"{a.arm}: {count(a.tool_calls.truncated)} tool results cut by the output budget."
        for a in arms
        if a.tool_calls.truncated
    ]
    return Section("Tool calls", ["arm", "tool", "calls", "mean duration"], rows, notes)


def _comparison_section(
    comparison: Comparison, arms: Mapping[str, ArmSummary], *, same_arm: bool = False
) -> Section:
    """One comparison's table; ``same_arm``: A and B are one arm in two runs (``docab compare``),
    so a change in fixed per-call cost is a change of its prompt or tools, not extra tools."""
    a, b = comparison.a, comparison.b
    heading = f"{b} vs {a} (paired, {comparison.paired} questions)"
    itt = comparison.itt
    if itt is None:
        return Section(heading, ["note"], [[comparison.note or "nothing to compare"]])
    accuracy, f1, tokens, latency = itt.accuracy, itt.f1, itt.tokens, itt.latency
    clustered = accuracy.clustered_mcnemar
    answerable = itt.answerable
    rows = [
        [
            "Accuracy",
            pct(accuracy.a),
            pct(accuracy.b),
            difference(accuracy.difference),
            f"clustered McNemar {p_value(clustered.p_value)} "
            f"(b = {clustered.only_a_correct}, c = {clustered.only_b_correct})",
            "",
        ],
        [
            f"Accuracy, answerable ({answerable.questions} q)",
            pct(answerable.a),
            pct(answerable.b),
            difference(answerable.difference),
            "",
            "",
        ],
        ["F1", pct(f1.a), pct(f1.b), difference(f1.difference), "", ""],
    ]
    if itt.evidence:
        recall, precision = itt.evidence.recall, itt.evidence.precision
        rows.append(
            [
                f"Evidence recall ({itt.evidence.questions} q)",
                pct(recall.a),
                pct(recall.b),
                difference(recall.difference),
                "",
                "",
            ]
        )
        if precision is not None:
            rows.append(
                [
                    "Evidence precision",
                    pct(precision.a),
                    pct(precision.b),
                    difference(precision.difference),
                    "",
                    "",
                ]
            )
    rows += [
        [
            "Tokens/q (median)",
            count(tokens.a.median),
            count(tokens.b.median),
            difference(tokens.difference, signed_count, "") + " (mean)",
            f"Wilcoxon {p_value(tokens.wilcoxon.p_value)}",
            ratio(tokens.ratio),
        ],
        *[
            [
                f"Tokens/q with {estimate.rule} prompt caching (estimate)",
                count(estimate.tokens.a.median),
                count(estimate.tokens.b.median),
                difference(estimate.tokens.difference, signed_count, "") + " (mean)",
                f"Wilcoxon {p_value(estimate.tokens.wilcoxon.p_value)}",
                ratio(estimate.tokens.ratio),
            ]
            for estimate in itt.prompt_cache
        ],
    ]
    if itt.cost is not None:
        spent = itt.cost
        rows.append(
            [
                "Cost (USD)/q (median)",
                usd(spent.a.median),
                usd(spent.b.median),
                difference(spent.difference, signed_usd, "") + " (mean)",
                f"Wilcoxon {p_value(spent.wilcoxon.p_value)}",
                ratio(spent.ratio),
            ]
        )
    elif any(_unpriced(arms.get(x)) for x in (a, b)):
        rows.append(["Cost (USD)/q", PRICE_UNKNOWN, PRICE_UNKNOWN, "", "", ""])
    rows += [
        [
            "Wall time/q (median)",
            seconds(latency.a.median),
            seconds(latency.b.median),
            difference(latency.difference, signed_seconds, "") + " (mean)",
            f"Wilcoxon {p_value(latency.wilcoxon.p_value)}",
            ratio(latency.ratio),
        ],
    ]
    plain = accuracy.mcnemar_ignoring_documents
    notes = [
        itt.mde.statement,
        *(
            [
                "Tokens are estimates (the offline policy's characters / 4) that count every turn's "
                'whole input, as a provider without prompt caching bills it; the rows "with ... '
                'prompt caching" estimate input-equivalent tokens when the repeated prefix of each '
                "turn is billed at the provider's cached-input price (docab.report.prompt_cache)."
            ]
            if itt.tokens_estimated and itt.prompt_cache
            else [
                'Rows "with ... prompt caching": estimates of input-equivalent tokens had every turn\'s '
                "repeated prefix been billed at that provider's cached-input price "
                "(docab.report.prompt_cache)."
            ]
            if itt.prompt_cache
            else []
        ),
        f"Plain McNemar, which ignores documents (its false-positive rate is far above 5 % when "
        f"questions cluster): {p_value(plain.p_value)}.",
    ]
    overhead = comparison.first_call_input_difference
    if overhead is not None and overhead.n:
        why = (
            "the same arm in both runs: a change here means its system prompt, tool definitions or "
            "questions changed"
            if same_arm
            else "the fixed per-turn cost of the extra tool definitions and prompt"
        )
        notes.append(
            f"First-call input tokens, {b} minus {a}: median {signed_count(overhead.median)} ({why})."
        )
    if _ok(itt.score_correlation):
        notes.append(f"Correlation of the arms' per-question scores: r = {itt.score_correlation:.2f}.")
    sensitivity = comparison.sensitivity
    if sensitivity is not None and sensitivity.accuracy is not None and sensitivity.f1 is not None:
        by_status = sensitivity.dropped_by_status
        causes = ", ".join(
            f"{n} {status}"
            for status, n in (
                ("error", by_status.error),
                ("timeout", by_status.timeout),
                ("limit", by_status.limit),
            )
            if n
        )
        notes.append(
            f"Sensitivity, {sensitivity.dropped} pair(s) not finished normally in an arm ({causes}) dropped "
            f"from both arms (n = {sensitivity.paired}): accuracy {difference(sensitivity.accuracy.difference)}, "
            f"F1 {difference(sensitivity.f1.difference)}."
        )
    else:
        notes.append(
            f"Sensitivity (pairs with an error, timeout or limit dropped): {sensitivity.note if sensitivity else ''}."
        )
    if (a in arms and arms[a].floor) or (b in arms and arms[b].floor):
        notes.append("An arm here is an offline baseline policy: a floor, not a model result.")
    return Section(heading, ["metric", a, b, "B − A [95 % CI]", "test", "ratio B/A [95 % CI]"], rows, notes)


def _breakdown_section(summary: Summary) -> Section:
    arm_names = [a.arm for a in summary.arms]
    others = arm_names[1:]
    rows = []
    for row in summary.breakdowns:
        cells = [row.dimension, row.group]
        cells.append(str(max((v.n for v in row.arms.values()), default=0)))
        cells += [pct(row.arms[a].accuracy) if a in row.arms else "" for a in arm_names]
        cells += [_breakdown_difference(row.differences.get(a)) for a in others]
        rows.append(cells)
    headers = [
        "dimension",
        "group",
        "n",
        *[f"Acc {a}" for a in arm_names],
        *[f"{a} − {arm_names[0]}" for a in others],
    ]
    notes = [
        "A question counts under each of its evidence sources; single-page means exactly one evidence page."
    ]
    if summary.breakdown_note:
        notes.append(summary.breakdown_note[0].upper() + summary.breakdown_note[1:])
    return Section("Accuracy by breakdown", headers, rows, notes)


def _breakdown_difference(cell: BreakdownDifference | None) -> str:
    if cell is None:
        return ""
    if cell.note:
        return f"{points(cell.value)} pts (no interval: {cell.documents} docs)"
    return difference(cell)


# -- renderers -------------------------------------------------------------------------------------------------


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def sections_markdown(parts: Sequence[Section]) -> list[str]:
    lines: list[str] = []
    for section in parts:
        lines += [f"## {section.title}", ""]
        if section.rows:
            lines.append("| " + " | ".join(_escape(h) for h in section.headers) + " |")
            lines.append("|" + "|".join("---" for _ in section.headers) + "|")
            lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in section.rows]
        else:
            lines.append("(none)")
        lines.append("")
        lines += [f"- {note}" for note in section.notes]
        if section.notes:
            lines.append("")
    return lines


def to_markdown(summary: Summary) -> str:
    lines = [f"# {title(summary)}", ""]
    if summary.floor:
        lines += [f"> **Floor:** an arm in this run is an {summary.label}.", ""]
    lines += sections_markdown(sections(summary))
    if summary.warnings:
        lines += ["## Warnings", "", *[f"- {w}" for w in summary.warnings], ""]
    lines += ["## Method", "", METHOD_NOTE, ""]
    return "\n".join(lines)


def _natural_width(table: Table) -> int:
    """The columns ``table`` takes when nothing limits it (at most :data:`WIDE_TABLE`)."""
    import io

    from rich.console import Console

    scratch = Console(width=WIDE_TABLE, file=io.StringIO(), color_system=None)
    scratch.print(table)
    return max((len(line.rstrip()) for line in scratch.file.getvalue().splitlines()), default=0)  # type: ignore[attr-defined]


def print_sections(parts: Sequence[Section], console: Console) -> None:
    from rich.table import Table

    for section in parts:
        table = Table(title=section.title, title_justify="left", show_lines=False, header_style="bold")
        for index, header in enumerate(section.headers):
            table.add_column(
                header, justify="left" if index == 0 else "right", overflow="fold", no_wrap=index == 0
            )
        for row in section.rows:
            table.add_row(*row)
        if console.is_terminal:
            console.print(table)
        else:  # a pipe: a table as wide as it needs, so it never wraps; notes at the console's width
            width = console.width
            console.width = max(width, _natural_width(table))
            try:
                console.print(table)
            finally:
                console.width = width
        for note in section.notes:
            console.print(f"  {note}", style="dim")


PIPED_WIDTH = 120
"""Columns of a pipe or a file (CI logs, ``| less``): a normal terminal's, where rich would assume
80. Notes wrap at it; a table wider than it is printed whole (up to :data:`WIDE_TABLE`), so no
table wraps."""
WIDE_TABLE = 1000


def report_console() -> Console:
    """A console on stdout: the terminal's width on a terminal; otherwise (a pipe, a file, CI logs)
    :data:`PIPED_WIDTH`, unless ``COLUMNS`` says otherwise."""
    import os

    from rich.console import Console

    console = Console()
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(width=PIPED_WIDTH)


def print_console(summary: Summary, console: Console | None = None) -> None:
    from rich.panel import Panel

    console = console or report_console()
    console.print(f"[bold]{title(summary)}[/bold]")
    if summary.floor:
        console.print(Panel(f"Floor: an arm in this run is an {summary.label}.", style="yellow"))
    print_sections(sections(summary), console)
    for warning in summary.warnings:
        loud = warning.startswith("EXTRACTION FAILED")
        console.print(f"warning: {warning}", style="bold red" if loud else "yellow")
    console.print(METHOD_NOTE, style="dim")


# -- docab plan -------------------------------------------------------------------------------------------


def duration(value: float | None) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``, ``3 d 4 h``."""
    if not _ok(value):
        return "–"
    if value < 90:
        return f"{value:.0f} s"
    minutes = value / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    hours, rest = divmod(round(minutes), 60)
    if hours < 48:
        return f"{hours} h {rest:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def _projected(cell: Projected | None, fmt: Format) -> tuple[str, str]:
    """The value and its interval (``low – high``) as text."""
    if cell is None:
        return PRICE_UNKNOWN, ""
    if cell.low is None or cell.high is None:
        return fmt(cell.value), "– (one document)"
    return fmt(cell.value), f"{fmt(cell.low)} – {fmt(cell.high)}"


def _size_rows(size: PlanSize, label: str, unpriced: bool) -> list[list[str]]:
    cost, cost_range = _projected(None if unpriced else size.cost, usd)
    to_go, to_go_range = _projected(None if unpriced else size.cost_to_go, usd)
    wall, wall_range = _projected(size.wall_s, duration)
    return [
        [
            f"{label}: questions / documents / samples",
            f"{size.questions:,} / {size.documents:,} / {size.samples:,}",
            "",
        ],
        [f"{label}: cost (USD)", cost, cost_range],
        [f"{label}: cost still to run after the pilot", to_go, to_go_range],
        [f"{label}: wall time", wall, wall_range],
        [f"{label}: MDE, accuracy B − A", difference_points(size.mde), ""],
    ]


def difference_points(value: float | None) -> str:
    return f"{value * 100:.1f} pts" if _ok(value) else "–"


def plan_section(plan: Plan) -> Section:
    """The plan's one table: the pilot as measured, the planned run, and with --mde the run that
    detects the target; notes say where every assumption comes from."""
    unpriced = bool(plan.unpriced)
    rows = [
        [
            "pilot: questions / documents / samples",
            f"{plan.pilot_questions:,} / {plan.pilot_documents:,} / {plan.pilot_samples:,}",
            "",
        ],
        ["pilot: cost (USD)", PRICE_UNKNOWN if unpriced else usd(plan.pilot_cost), "measured"],
        ["pilot: wall time", duration(plan.pilot_wall_s), "measured"],
    ]
    rows += _size_rows(plan.full, "planned run", unpriced)
    if plan.for_target is not None and plan.target_mde is not None:
        rows += _size_rows(plan.for_target, f"for a {plan.target_mde * 100:g}-point MDE", unpriced)
    compared = " vs ".join(reversed(plan.compared)) if plan.compared else "(one arm)"
    sources = {"pilot": "the pilot's", "pilot bound": "the pilot's upper bound", "default": "default"}
    notes = [
        f"{len(plan.arms)} arm{'s' * (len(plan.arms) != 1)} ({', '.join(plan.arms)}), {plan.epochs} "
        f"epoch{'s' * (plan.epochs != 1)}; cost intervals are 95 %, cluster-robust over documents, and "
        "cover the questions not yet run (finite-population corrected).",
        f"Wall time at concurrency {plan.concurrency}, bound by {plan.time_limited_by}; the pilot's "
        f"sessions took {plan.overhead:.2f}x its samples' own time per worker (set-up, waits) and "
        f"{duration(plan.startup_s)} to start, both counted.",
        f"MDE of {compared}: {plan.power:.0%} power, two-sided alpha {plan.alpha:g}; discordance "
        f"{plan.discordance:.3f} ({sources[plan.discordance_source]}), ICC {plan.icc:.3f} "
        f"({sources[plan.icc_source]}).",
        *plan.notes,
    ]
    if not unpriced and plan.full.cost is not None and plan.full.cost.high:
        notes.append(
            f"A spend cap at the high end stops a run that costs more than planned: --max-cost "
            f"{math.ceil(plan.full.cost.high * 100) / 100:.2f}"
        )
    return Section("Plan: the pilot projected", ["", "projected", "95 % interval"], rows, notes)


def plan_markdown(plan: Plan, run_id: str = "") -> str:
    lines = [f"# Plan from pilot {run_id or '?'}", "", *sections_markdown([plan_section(plan)])]
    return "\n".join(lines)


def print_plan(plan: Plan, run_id: str = "", console: Console | None = None) -> None:
    console = console or report_console()
    console.print(f"[bold]Plan from pilot {run_id or '?'}[/bold]")
    print_sections([plan_section(plan)], console)


# -- docab compare ----------------------------------------------------------------------------------------


def gate_section(comparison: Comparison, checks: Sequence[Check], alpha: float = 0.05) -> Section:
    """The gate's verdict per metric for one comparison."""
    rows = []
    for check in checks:
        if check.unit == "points":
            change = "–" if check.change is None else f"{check.change:+.1f} pts"
            limit = (
                "–"
                if check.threshold is None
                else f"−{check.threshold:g} pts"
                if check.threshold
                else "0 pts"
            )
            values = (pct(check.a), pct(check.b))
            bound = "–" if check.bound is None else f"≤ {check.bound:+.1f} pts"
        else:
            change = "–" if check.change is None else f"{check.change:+.1f} %"
            limit = "–" if check.threshold is None else f"+{check.threshold:g} %"
            shown = seconds if check.metric == "latency" else count
            values = (shown(check.a), shown(check.b))
            bound = "–" if check.bound is None else f"≥ {check.bound:+.1f} %"
        interval = (
            f"[{check.low:+.1f}, {check.high:+.1f}]"
            if check.low is not None and check.high is not None
            else "–"
        )
        adjusted = "–" if check.adjusted_p is None else p_value(check.adjusted_p).removeprefix("p ")
        rows.append([check.metric, *values, change, interval, bound, limit, adjusted, check.verdict.upper()])
    return Section(
        f"Gate: {comparison.b} against {comparison.a}",
        ["metric", "A", "B", "change", "95 % CI", "bound at Holm's level", "allowed", "Holm p", "verdict"],
        rows,
        [
            "Scores change in points (B − A); tokens and latency by the paired geometric-mean ratio "
            "(A and B show medians). Each gated metric is tested one-sided for being worse than "
            "allowed; the p-values are Holm-adjusted across the gated metrics, and a metric fails when "
            f"its adjusted p is below {alpha:g}, so the gate fails by mistake at most {alpha:.0%} of "
            "the time when nothing got worse (docab calibrate). The bound is the one-sided "
            "confidence bound at the level Holm's step tests the metric at: a metric fails when it "
            "lies beyond the allowed change. A metric whose figure rests on one document cannot be "
            "tested, and fails the gate."
        ],
    )


def compare_sections(
    comparison: Comparison,
    summary: Summary,
    checks: Sequence[Check],
    *,
    same_arm: bool = False,
    alpha: float = 0.05,
) -> list[Section]:
    arms = {arm.arm: arm for arm in summary.arms}
    return [_comparison_section(comparison, arms, same_arm=same_arm), gate_section(comparison, checks, alpha)]
