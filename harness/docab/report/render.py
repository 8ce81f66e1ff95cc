"""The report summary as tables: one layout, rendered as markdown or as a rich terminal display.

``sections(summary)`` decides what is shown (titles, headers, rows, notes); the two renderers only
format. The summary is the JSON data built by ``docab.report.summary.build_report``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

METHOD_NOTE = (
    "Intervals are 95 %. Arm accuracy: Clopper-Pearson on the Korn-Graubard effective sample size "
    "below 300 questions, document-clustered t above. F1, evidence recall and every B - A difference: "
    "paired cluster bootstrap over documents (percentile). Epochs are averaged per question first; "
    "errors and timeouts score 0 (intention-to-treat). Tokens count every role per question."
)


@dataclass
class Section:
    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


# -- formatting -------------------------------------------------------------------------------------------


def _ok(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def pct(value: Any) -> str:
    return f"{value * 100:.1f} %" if _ok(value) else "–"


def with_interval(cell: Mapping[str, Any] | None, fmt: Any = pct) -> str:
    if not cell or not _ok(cell.get("value", cell.get("estimate"))):
        return "–"
    value = cell.get("value", cell.get("estimate"))
    if _ok(cell.get("low")) and _ok(cell.get("high")):
        return f"{fmt(value)} [{fmt(cell['low'])}, {fmt(cell['high'])}]"
    return fmt(value)


def points(value: Any) -> str:
    return f"{value * 100:+.1f}" if _ok(value) else "–"


def difference(cell: Mapping[str, Any] | None, fmt: Any = points, unit: str = " pts") -> str:
    if not cell or not _ok(cell.get("estimate")):
        return "–"
    text = f"{fmt(cell['estimate'])}{unit}"
    if _ok(cell.get("low")) and _ok(cell.get("high")):
        text += f" [{fmt(cell['low'])}, {fmt(cell['high'])}]"
    return text


def count(value: Any) -> str:
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


def signed_count(value: Any) -> str:
    return ("+" if _ok(value) and value > 0 else "") + count(value)


def seconds(value: Any) -> str:
    return f"{value:.1f} s" if _ok(value) else "–"


def signed_seconds(value: Any) -> str:
    return f"{value:+.1f} s" if _ok(value) else "–"


def p_value(value: Any) -> str:
    """``p = 0.013`` or ``p < 0.001``."""
    if not _ok(value):
        return "p –"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def median_p90(spread: Mapping[str, Any] | None, fmt: Any = count) -> str:
    if not spread or not spread.get("n"):
        return "–"
    return f"{fmt(spread['median'])} ({fmt(spread['p90'])})"


def ratio(cell: Mapping[str, Any]) -> str:
    if not _ok(cell.get("ratio")):
        return "–"
    text = f"×{cell['ratio']:.2f}"
    if _ok(cell.get("ratio_low")) and _ok(cell.get("ratio_high")):
        text += f" [{cell['ratio_low']:.2f}, {cell['ratio_high']:.2f}]"
    return text


# -- layout --------------------------------------------------------------------------------------------------


def title(summary: Mapping[str, Any]) -> str:
    heading = f"A/B report: run {summary.get('run_id', '?')}"
    return heading + (f" ({summary['label']})" if summary.get("floor") else "")


def sections(summary: Mapping[str, Any]) -> list[Section]:
    arms = summary["arms"]
    result = [_arms_section(arms), _tokens_section(arms), _time_section(arms), _tools_section(arms)]
    by_name = {a["arm"]: a for a in arms}
    result += [_comparison_section(c, by_name) for c in summary["comparisons"]]
    if summary["breakdowns"]:
        result.append(_breakdown_section(summary))
    return result


def _models(arm: Mapping[str, Any]) -> str:
    text = ", ".join(arm["models"])
    return f"{text} (floor)" if arm["floor"] else text


def _arms_section(arms: Sequence[Mapping[str, Any]]) -> Section:
    rows = []
    for arm in arms:
        status = arm["status"]
        recall = arm.get("evidence_recall")
        rows.append(
            [
                arm["arm"],
                _models(arm),
                f"{arm['questions']} ({arm['documents']} docs, {arm['epochs']} ep.)",
                with_interval(arm["accuracy"]),
                with_interval(arm["f1"]),
                f"{status['ok']} / {status['error']} / {status['timeout']} / {status['limit']}",
                with_interval(recall) if recall else "–",
            ]
        )
    notes = []
    for arm in arms:
        if arm["limits"]:
            hits = ", ".join(f"{k} {v}" for k, v in sorted(arm["limits"].items()))
            notes.append(f"{arm['arm']}: limits hit: {hits}.")
        if arm["retries"]:
            notes.append(f"{arm['arm']}: {arm['retries']} model-call retries.")
    return Section(
        "Arms",
        [
            "arm",
            "model",
            "questions",
            "Acc [95 % CI]",
            "F1 [95 % CI]",
            "ok / error / timeout / limit",
            "evidence recall",
        ],
        rows,
        notes,
    )


ROLE_ORDER = ("agent", "tool-side", "extractor")


def _role_order(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def _tokens_section(arms: Sequence[Mapping[str, Any]]) -> Section:
    roles = sorted({r for a in arms for r in a["tokens"]["by_role"]}, key=_role_order)
    rows = []
    for arm in arms:
        tokens = arm["tokens"]
        definitions = tokens.get("tool_definition_tokens")
        share = tokens["cache_read_share"]
        rows.append(
            [arm["arm"], median_p90(tokens["total"])]
            + [median_p90(tokens["by_role"].get(role)) for role in roles]
            + [
                pct(share) if share is not None else "–",
                count(tokens["first_call_input"]["median"]) if tokens["first_call_input"]["n"] else "–",
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


def _time_section(arms: Sequence[Mapping[str, Any]]) -> Section:
    rows = [
        [
            arm["arm"],
            median_p90(arm["time"]["wall_s"], seconds),
            median_p90(arm["time"]["model_s"], seconds),
            median_p90(arm["time"]["tool_s"], seconds),
            count(arm["turns"]["median"]),
            count(arm["tool_calls"]["per_question"]["mean"]),
        ]
        for arm in arms
    ]
    return Section(
        "Time per question (median (p90))",
        ["arm", "wall", "model", "tools", "turns (median)", "tool calls (mean)"],
        rows,
        [],
    )


def _tools_section(arms: Sequence[Mapping[str, Any]]) -> Section:
    rows = []
    for arm in arms:
        for name, entry in arm["tool_calls"]["by_name"].items():
            rows.append(
                [
                    arm["arm"],
                    name,
                    count(entry["calls"]),
                    seconds(entry["mean_s"]) if entry["mean_s"] is not None else "–",
                ]
            )
    notes = [
        f"{a['arm']}: {count(a['tool_calls']['truncated'])} tool results cut by the output budget."
        for a in arms
        if a["tool_calls"]["truncated"]
    ]
    return Section("Tool calls", ["arm", "tool", "calls", "mean duration"], rows, notes)


def _comparison_section(comparison: Mapping[str, Any], arms: Mapping[str, Mapping[str, Any]]) -> Section:
    a, b = comparison["a"], comparison["b"]
    heading = f"{b} vs {a} (paired, {comparison['paired']} questions)"
    if "itt" not in comparison:
        return Section(heading, ["note"], [[comparison.get("note", "nothing to compare")]])
    itt = comparison["itt"]
    accuracy, f1, tokens, latency, mcnemar = (
        itt["accuracy"],
        itt["f1"],
        itt["tokens"],
        itt["latency"],
        itt["mcnemar"],
    )
    rows = [
        [
            "Accuracy",
            pct(accuracy["a"]),
            pct(accuracy["b"]),
            difference(accuracy["difference"]),
            f"McNemar {p_value(mcnemar['p_value'])} (b = {mcnemar['b']}, c = {mcnemar['c']})",
            "",
        ],
        ["F1", pct(f1["a"]), pct(f1["b"]), difference(f1["difference"]), "", ""],
    ]
    recall = comparison.get("evidence_recall")
    if recall:
        rows.append(
            [
                f"Evidence recall ({recall['questions']} q)",
                pct(recall["a"]),
                pct(recall["b"]),
                difference(recall["difference"]),
                "",
                "",
            ]
        )
    rows += [
        [
            "Tokens/q (median)",
            count(tokens["a"]["median"]),
            count(tokens["b"]["median"]),
            difference(tokens["difference"], signed_count, "") + " (mean)",
            f"Wilcoxon {p_value(tokens['wilcoxon']['p_value'])}",
            ratio(tokens["ratio"]),
        ],
        [
            "Wall time/q (median)",
            seconds(latency["a"]["median"]),
            seconds(latency["b"]["median"]),
            difference(latency["difference"], signed_seconds, "") + " (mean)",
            f"Wilcoxon {p_value(latency['wilcoxon']['p_value'])}",
            ratio(latency["ratio"]),
        ],
    ]
    notes = [comparison["mde_statement"]]
    correlation = itt.get("score_correlation")
    overhead = comparison.get("first_call_input_difference", {})
    if overhead.get("n"):
        notes.append(
            f"First-call input tokens, {b} minus {a}: median {signed_count(overhead['median'])} "
            "(the fixed per-turn cost of the extra tool definitions and prompt)."
        )
    if _ok(correlation):
        notes.append(f"Correlation of the arms' per-question scores: r = {correlation:.2f}.")
    dropped = comparison["pairs_dropped"]
    if "accuracy" in dropped:
        notes.append(
            f"Sensitivity, {dropped['dropped']} pair(s) with an error or timeout dropped from both arms "
            f"(n = {dropped['paired']}): accuracy {difference(dropped['accuracy']['difference'])}, "
            f"F1 {difference(dropped['f1']['difference'])}."
        )
    else:
        notes.append(f"Sensitivity (pairs with errors dropped): {dropped.get('note', '')}.")
    if arms.get(a, {}).get("floor") or arms.get(b, {}).get("floor"):
        notes.append("An arm here is an offline baseline policy: a floor, not a model result.")
    return Section(heading, ["metric", a, b, "B − A [95 % CI]", "test", "ratio B/A [95 % CI]"], rows, notes)


def _breakdown_section(summary: Mapping[str, Any]) -> Section:
    arm_names = [a["arm"] for a in summary["arms"]]
    others = arm_names[1:]
    rows = []
    for row in summary["breakdowns"]:
        cells = [row["dimension"], row["group"]]
        cells.append(str(max((v["n"] for v in row["arms"].values()), default=0)))
        cells += [pct(row["arms"][a]["accuracy"]) if a in row["arms"] else "" for a in arm_names]
        cells += [difference(row["differences"].get(a)) if row["differences"].get(a) else "" for a in others]
        rows.append(cells)
    headers = [
        "dimension",
        "group",
        "n",
        *[f"Acc {a}" for a in arm_names],
        *[f"{a} − {arm_names[0]}" for a in others],
    ]
    return Section(
        "Accuracy by breakdown",
        headers,
        rows,
        [
            "A question counts under each of its evidence sources; single-page means exactly one evidence page."
        ],
    )


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


def to_markdown(summary: Mapping[str, Any]) -> str:
    lines = [f"# {title(summary)}", ""]
    if summary.get("floor"):
        lines += [f"> **Floor:** an arm in this run is an {summary['label']}.", ""]
    lines += sections_markdown(sections(summary))
    if summary.get("warnings"):
        lines += ["## Warnings", "", *[f"- {w}" for w in summary["warnings"]], ""]
    lines += ["## Method", "", METHOD_NOTE, ""]
    return "\n".join(lines)


def print_sections(parts: Sequence[Section], console: Any) -> None:
    from rich.table import Table

    for section in parts:
        table = Table(title=section.title, title_justify="left", show_lines=False, header_style="bold")
        for index, header in enumerate(section.headers):
            table.add_column(
                header, justify="left" if index == 0 else "right", overflow="fold", no_wrap=index == 0
            )
        for row in section.rows:
            table.add_row(*row)
        console.print(table)
        for note in section.notes:
            console.print(f"  {note}", style="dim")


def print_console(summary: Mapping[str, Any], console: Any = None) -> None:
    from rich.console import Console
    from rich.panel import Panel

    console = console or Console()
    console.print(f"[bold]{title(summary)}[/bold]")
    if summary.get("floor"):
        console.print(Panel(f"Floor: an arm in this run is an {summary['label']}.", style="yellow"))
    print_sections(sections(summary), console)
    for warning in summary.get("warnings", []):
        console.print(f"warning: {warning}", style="yellow")
    console.print(METHOD_NOTE, style="dim")


# -- docab compare ----------------------------------------------------------------------------------------


def gate_section(comparison: Mapping[str, Any], checks: Sequence[Any]) -> Section:
    """The gate's verdict per metric (``docab.report.gate.Check`` objects) for one comparison."""
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
        else:
            change = "–" if check.change is None else f"{check.change:+.1f} %"
            limit = "–" if check.threshold is None else f"+{check.threshold:g} %"
            shown = seconds if check.metric == "latency" else count
            values = (shown(check.a), shown(check.b))
        interval = (
            f"[{check.low:+.1f}, {check.high:+.1f}]"
            if check.low is not None and check.high is not None
            else "–"
        )
        rows.append([check.metric, *values, change, interval, limit, check.verdict.upper()])
    return Section(
        f"Gate: {comparison['b']} against {comparison['a']}",
        ["metric", "A", "B", "change", "95 % CI", "allowed", "verdict"],
        rows,
        [
            "Scores change in points (B − A); tokens and latency by the paired geometric-mean ratio "
            "(A and B show medians). A metric fails only when it is worse than allowed and its "
            "interval excludes no change."
        ],
    )


def compare_sections(
    comparison: Mapping[str, Any], summary: Mapping[str, Any], checks: Sequence[Any]
) -> list[Section]:
    arms = {arm["arm"]: arm for arm in summary["arms"]}
    return [_comparison_section(comparison, arms), gate_section(comparison, checks)]
