"""``docab report`` names the sessions that ran with other package versions or another docab commit
than the run's first session (``docab run`` notes it on resuming; the manifest's sessions record
each): in report.md, a table of them and what differs, and in summary.json, ``version_changes``
(the manifest's own ``SessionVersions``). A merged run's parts, and further folders reported with
the run, are included, each session once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docab.cli.main import main
from docab.log.manifest import DOCAB_COMMIT, GitState, Session, VersionChange
from docab.log.merge import merge_runs
from docab.report.render import to_markdown
from docab.report.schema import parse_summary
from docab.report.summary import build_report, load_run
from tests.harness.synthetic_runs import make_record, write_run

OLD, NEW = "a" * 40, "b" * 40


def session(started: str, md_vision: str | None = "0.3.0", commit: str = OLD) -> dict[str, Any]:
    return Session(
        started_at=started,
        host="node-1",
        git=GitState(commit=commit, dirty=False),
        packages={"docab": "1.0", "md-vision": md_vision, "mcp": "1.2"},
    ).model_dump(mode="json")


def run(folder: Path, qids: list[str], sessions: list[dict[str, Any]], **manifest: Any) -> Path:
    records = [make_record("fs", qid, "d1") for qid in qids]
    return write_run(folder, records, {"sessions": sessions, **manifest})


def test_report_names_the_sessions_whose_versions_differ_from_the_first(tmp_path: Path) -> None:
    folder = run(
        tmp_path / "r",
        ["q1", "q2"],
        [
            session("2026-01-01T00:00:00+00:00"),
            session("2026-01-02T00:00:00+00:00"),
            session("2026-01-03T00:00:00+00:00", "0.4.0", NEW),
        ],
    )
    summary = build_report(load_run(folder)).summary
    [changed] = summary.version_changes
    assert changed.number == 3 and changed.part is None
    assert changed.session.started_at == "2026-01-03T00:00:00+00:00"
    assert changed.changes == (
        VersionChange(name="md-vision", before="0.3.0", after="0.4.0"),
        VersionChange(name=DOCAB_COMMIT, before=OLD, after=NEW),
    )
    assert parse_summary(summary.model_dump_json()) == summary  # summary.json round-trips

    assert main(["report", str(folder), "--no-plots"]) == 0
    markdown = (folder / "report.md").read_text()
    assert "## Sessions with other versions" in markdown
    assert (
        "| 3 | 2026-01-03T00:00:00+00:00 | node-1 | the run's own | md-vision 0.3.0 → 0.4.0, docab's commit aaaaaaaaaa → bbbbbbbbbb |"
        in markdown
    )
    assert "1 session ran with other package versions or docab code than the run's first session" in markdown
    written = parse_summary((folder / "summary.json").read_bytes())
    assert [c.describe() for c in written.version_changes] == [
        "session 3 (started 2026-01-03T00:00:00+00:00): md-vision 0.3.0 → 0.4.0, docab's commit aaaaaaaaaa → bbbbbbbbbb"
    ]


def test_a_run_whose_sessions_share_their_versions_lists_none(tmp_path: Path) -> None:
    folder = run(tmp_path / "r", ["q1"], [session("1"), session("2")])
    summary = build_report(load_run(folder)).summary
    assert summary.version_changes == []
    assert "Sessions with other versions" not in to_markdown(summary)
    older = run(tmp_path / "old", ["q1"], [])  # a manifest without sessions (hand-written, older)
    assert build_report(load_run(older)).summary.version_changes == []


def test_a_merged_runs_parts_are_compared_with_its_first_session(tmp_path: Path) -> None:
    one = run(tmp_path / "s1", ["q1"], [session("1")], shard={"index": 1, "count": 2})
    two = run(tmp_path / "s2", ["q2"], [session("2", md_vision=None)], shard={"index": 2, "count": 2})
    out = tmp_path / "merged"
    merge_runs([one, two], out)
    [changed] = build_report(load_run(out)).summary.version_changes
    assert changed.part == str(two) and changed.number == 1
    assert changed.changes == (VersionChange(name="md-vision", before="0.3.0", after=None),)
    assert "md-vision 0.3.0 → absent" in changed.describe() and f"in {two}" in changed.describe()
    # The shards reported together, unmerged, say the same.
    [together] = build_report(load_run(one, two)).summary.version_changes
    assert together.part == str(two) and together.changes == changed.changes
