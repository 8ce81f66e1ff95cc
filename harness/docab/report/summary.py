"""From a run's records to the conclusions a researcher can defend.

``load_run(RUN_DIR)`` reads ``manifest.json`` and ``records.jsonl`` (tolerating the torn last line
of a killed run); ``build_report(run)`` turns the records into a summary: per arm, the paired A/B
comparisons and the breakdowns, as a typed :class:`docab.report.schema.Summary` (written into the
run as ``summary.json``); ``docab.report.render`` renders it as a terminal table or markdown, and
``docab.report.plots`` draws it.

This module loads runs and assembles the summary; the computations are by what they summarise:
:mod:`docab.report.outcomes` (one arm on one question), :mod:`docab.report.arms` (one arm),
:mod:`docab.report.comparisons` (two arms, paired) and :mod:`docab.report.breakdowns` (by kind of
question).

Conventions, from ../shared/specs/harness.md and mmlongbench.md:

- intention-to-treat: every record counts, errors, timeouts and limits with score 0; the
  sensitivity view drops a question from *both* arms when either arm did not finish it normally
  (status error, timeout or limit), and says how many of each;
- epochs are averaged per question before anything else; documents are the clustering unit;
- Acc is the mean score, reported beside the accuracy on answerable questions alone and the
  "always Not answerable" reference row (about a fifth of MMLongBench-Doc is unanswerable, so a
  policy that never answers beats a weak one); F1 is the generalised F1 (precision over
  predictions other than exactly "Not answerable"); evidence recall is the share of a question's
  gold evidence pages the agent read, precision the share of the pages read that are evidence;
- every interval is the cluster-robust t of :mod:`docab.report.stats`, with documents as clusters;
  breakdown cells are unadjusted for their number, and say so;
- tokens are per question, all roles (agent, tool-side, extractor) unless a role is named, and so
  are US dollars (``docab.pricing``: a record's cost as written, or its usage priced by the table);
  a model without a known price makes a cost unknown (None), never 0;
- a run of an offline baseline policy (``baseline/...``) is labelled a floor everywhere.

The summary's schema (``summary.json``, versioned) is :mod:`docab.report.schema`: this module is
its one writer.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from docab.interchange import is_inspect_source
from docab.log.manifest import (
    ArmManifest,
    Manifest,
    ManifestError,
    ModelsInfo,
    SessionVersions,
    load_manifest,
)
from docab.log.records import RunRecord
from docab.log.spend_journal import SPEND_JOURNAL, SpendTotals, read_spend
from docab.report import schema, stats
from docab.report.arms import FLOOR_LABEL, arm_order, arm_summary, extraction_warnings, price_rows
from docab.report.breakdowns import breakdown_note, breakdowns, reference_rows
from docab.report.comparisons import CALIBRATED_FROM_DOCUMENTS, compare_arms
from docab.report.outcomes import QuestionOutcome, question_outcomes
from docab.usage import PLAUSIBLE_COUNT, implausible


class ReportError(Exception):
    """A run that cannot be reported; the message says what is wrong and what to do."""


# -- loading ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunData:
    sources: tuple[Path, ...]
    manifest: Manifest  # an empty Manifest() when the run has none (the records alone are reported)
    records: tuple[RunRecord, ...]
    warnings: tuple[str, ...] = ()
    # USD billed for samples that have no record (cut short and run again): the folders' spend
    # journals less what their records cost (docab.log.spend_journal); 0 without journals.
    unrecorded_usd: float = 0.0
    # Calls a kill interrupted in flight (journaled as sent, never as returned), in every folder's
    # spend journal, and the most they can have cost (docab.log.spend_journal); not in unrecorded_usd.
    interrupted_calls: int = 0
    interrupted_usd: float = 0.0
    # sessions that ran with other versions than the run's first (Manifest.sessions_with_other_versions)
    version_changes: tuple[SessionVersions, ...] = ()

    @property
    def arms(self) -> list[str]:
        """Arm names: the manifest's order, then any others in the order records show them."""
        seen = list(dict.fromkeys(r.arm for r in self.records))
        return arm_order(self.manifest, seen)


def read_records(path: Path) -> tuple[list[RunRecord], list[str]]:
    """Records from one ``records.jsonl``; unreadable lines are skipped and reported, never fatal."""
    from docab.log.store import StoreError, read_records_reporting

    try:
        return read_records_reporting(path)
    except StoreError as exc:
        raise ReportError(str(exc)) from None


def load_run(*run_dirs: Path | str, reruns_as_epochs: bool = False) -> RunData:
    """One run, or several merged; or Inspect eval logs, one arm each (:func:`load_inspect_logs`).
    Several folders must be parts of one run (the same config, as ``docab merge`` requires:
    :func:`check_one_run`). Shards (disjoint questions) simply unite. A record key seen
    twice keeps its last copy (a resumed or repeated shard), unless ``reruns_as_epochs``: then each
    folder's records of a question already seen in an earlier folder become further epochs of it,
    so reruns of one config average like ``epochs = k`` would."""
    if not run_dirs:
        raise ReportError("no run folder given")
    sources = tuple(Path(d) for d in run_dirs)
    inspect_sources = [s for s in sources if is_inspect_source(s)]
    if inspect_sources:
        if len(inspect_sources) != len(sources):
            raise ReportError("give docab run folders or Inspect logs, not both")
        return load_inspect_logs(sources)
    manifest: Manifest | None = None
    records: dict[tuple[str, str, int], RunRecord] = {}
    warnings: list[str] = []
    manifests: list[tuple[Path, Manifest]] = []
    duplicates = 0
    unrecorded = 0.0
    interrupted = SpendTotals()
    for folder in sources:
        if not folder.is_dir():
            raise ReportError(f"{folder} is not a run folder (expected results/<run-id>/ with records.jsonl)")
        path = folder / "records.jsonl"
        if not path.is_file():
            raise ReportError(f"{folder} has no records.jsonl yet; has the run written any sample?")
        manifest_path = folder / "manifest.json"
        if manifest_path.is_file():
            try:
                loaded = load_manifest(manifest_path)
                manifest = manifest or loaded
                manifests.append((folder, loaded))
            except ManifestError as exc:
                warnings.append(f"{manifest_path} is unreadable ({exc}); reporting without it")
        else:
            warnings.append(f"{folder} has no manifest.json; reporting the records alone")
        check_one_run(manifests)
        found, problems = read_records(path)
        warnings += [f"{folder.name}/{p}" for p in problems]
        journal = read_spend(folder / SPEND_JOURNAL)
        unrecorded += unrecorded_spend(folder, found, manifests[-1][1] if manifests else None, journal)
        if journal is not None:
            interrupted = dataclasses.replace(
                interrupted,
                interrupted=interrupted.interrupted + journal.interrupted,
                interrupted_usd=interrupted.interrupted_usd + journal.interrupted_usd,
            )
        if reruns_as_epochs:
            found = _as_further_epochs(found, records.values())
        for record in found:
            earlier = records.get(record.key)
            # A newer record of a sample that errored is a retry (docab run --retry-errors), not a duplicate.
            duplicates += earlier is not None and earlier.status not in ("error", "timeout")
            records[record.key] = record
    if duplicates:
        warnings.append(f"{duplicates} record(s) appeared more than once; the last copy of each was kept")
    warnings += data_warnings(manifests)
    if manifest is not None and manifest.merged_from:
        from docab.log.merge import merged_coverage

        coverage = merged_coverage(manifest)
        if not coverage.complete:
            warnings.append(f"a partial run (docab merge --allow-partial): {coverage.describe()}")
    if not records:
        raise ReportError(f"no run records in {', '.join(str(s) for s in sources)}")
    warnings += implausible_usage_warnings(records.values())
    if unrecorded >= 0.00005:
        warnings.append(
            f"${unrecorded:.4f} was billed for samples that have no record (cut short by a kill, a Ctrl-C, a "
            "stopped run or the spend cap, and run again): not in the cost table, which counts records "
            "(every billed call is in spend.jsonl)"
        )
    if interrupted.interrupted:
        warnings.append(
            f"{interrupted.interrupted_note()} (each at its most: its input and max output tokens at "
            "its price; in flight when a run was killed, see spend.jsonl); not in the cost table"
        )
    versions = (
        manifest.sessions_with_other_versions(*((str(f), m) for f, m in manifests[1:]))
        if manifest is not None
        else ()
    )
    return RunData(
        sources,
        manifest or Manifest(),
        tuple(records.values()),
        tuple(warnings),
        unrecorded,
        interrupted.interrupted,
        interrupted.interrupted_usd,
        versions,
    )


def implausible_usage_warnings(records: Iterable[RunRecord]) -> list[str]:
    """One warning when any model call reported more tokens than a model can use in one call
    (:func:`docab.usage.implausible`): such calls are in the cost table as billed, which is then
    likely wrong (an endpoint's bug), and the run said so only on its console."""
    found = [(record, flagged) for record in records for u in record.usage if (flagged := implausible(u))]
    if not found:
        return []
    record, largest = max(found, key=lambda pair: pair[1].count)
    return [
        f"{len(found)} model call(s) reported more tokens than any model uses in one call (over "
        f"{PLAUSIBLE_COUNT:,}; the largest: {largest.describe()}, in {record.arm}/{record.qid}): they are "
        "in the cost table as billed; check the endpoint's usage reports before trusting the cost"
    ]


def unrecorded_spend(
    folder: Path,
    records: Sequence[RunRecord],
    manifest: Manifest | None,
    journal: SpendTotals | None = None,
) -> float:
    """USD the folder's spend journal (``journal``, when read already) counts beyond what its
    records (every one, retries included) cost; 0 when it has no journal."""
    from docab.log.costs import manifest_prices, record_cost

    journal = journal or read_spend(folder / SPEND_JOURNAL)
    if journal is None:
        return 0.0
    book = manifest_prices(manifest) if manifest is not None else None
    return max(0.0, journal.usd - sum(record_cost(r, book).priced for r in records))


def data_warnings(manifests: Sequence[tuple[Path, Manifest]]) -> list[str]:
    """A warning for each folder whose manifest recorded other contents than the folders before it
    for the same questions or documents (``docab.log.merge.data_check``, which ``docab merge``
    refuses without --accept-data-change)."""
    from docab.log.merge import data_check

    return [
        f"{conflict.describe()}: the folders were run on different data, so their samples are scored "
        "against two sets of data (docab merge refuses them without --accept-data-change)"
        for conflict in data_check(manifests).conflicts
    ]


def check_one_run(manifests: Sequence[tuple[Path, Manifest]]) -> None:
    """Raise ReportError unless the folders' manifests are of one run: the same identity
    (``docab.log.store.run_identity``), the check ``docab merge`` makes before merging parts."""
    from docab.log.store import run_identity

    if len({run_identity(m) for _, m in manifests}) <= 1:
        return
    listing = ", ".join(f"{folder} ({run_identity(m)[:12] or 'no hash'})" for folder, m in manifests)
    first = manifests[0][0]
    other = next(folder for folder, m in manifests if run_identity(m) != run_identity(manifests[0][1]))
    raise ReportError(
        f"the folders were run with different configs: {listing}, so they are not parts of one run; "
        f"compare two runs with `docab compare {first} {other}` (several folders of `docab report` "
        "are merged as `docab merge` merges them: shards or reruns of one config)"
    )


def load_inspect_logs(sources: Sequence[Path]) -> RunData:
    """Inspect eval logs as one run, one arm per log (``docab export --format inspect`` writes them, and
    so does an ``inspect eval`` of the docab task): ``docab.interchange.inspect_files.read_logs``."""
    from docab.errors import DocabError
    from docab.interchange import require_inspect_ai

    try:
        require_inspect_ai("reading Inspect logs")
        from docab.interchange.inspect_files import read_logs

        logs = read_logs(sources)
    except DocabError as exc:
        raise ReportError(str(exc)) from None
    if not logs.records:
        raise ReportError(f"no samples in the Inspect logs {', '.join(str(s) for s in sources)}")
    manifest = Manifest(
        run_id=logs.run_id,
        arms=logs.arm_configs or tuple(ArmManifest(name=arm) for arm in logs.arms),
        models=ModelsInfo(agent=logs.models[0] if len(logs.models) == 1 else ", ".join(logs.models)),
    )
    return RunData(tuple(sources), manifest, logs.records, logs.warnings)


def _as_further_epochs(found: Sequence[RunRecord], earlier: Iterable[RunRecord]) -> list[RunRecord]:
    """``found`` with the epochs of questions already in ``earlier`` numbered after theirs."""
    last: dict[tuple[str, str], int] = {}
    for record in earlier:
        key = (record.arm, record.qid)
        last[key] = max(last.get(key, -1), record.epoch)
    return [
        dataclasses.replace(r, epoch=r.epoch + last[(r.arm, r.qid)] + 1) if (r.arm, r.qid) in last else r
        for r in found
    ]


# -- one question, one arm --------------------------------------------------------------------------


# -- per-arm summary ----------------------------------------------------------------------------------


# -- paired comparisons -------------------------------------------------------------------------------


# -- breakdowns -----------------------------------------------------------------------------------------


# -- the report -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    summary: schema.Summary  # summary.json
    outcomes: dict[str, dict[str, QuestionOutcome]]  # arm -> qid -> outcome, for plots and notebooks


def build_report(
    run: RunData,
    *,
    reference: str | None = None,
    arms: Sequence[str] | None = None,
    with_breakdowns: bool = True,
    plan: schema.Plan | None = None,
) -> Report:
    """Summaries per arm, each arm against the reference arm (the first, unless named), reference
    rows, and breakdowns (left out, as an empty list, by callers that show none); ``plan``, a
    projection of this run to a full run (``docab plan``), is carried into the summary."""
    outcomes = question_outcomes(run.records)
    order = arm_order(run.manifest, list(outcomes))
    if arms:
        missing = [a for a in arms if a not in outcomes]
        if missing:
            raise ReportError(f"arm(s) {', '.join(missing)} not in this run; it has {', '.join(order)}")
        order = list(arms)
    reference = reference or order[0]
    if reference not in outcomes:
        raise ReportError(f"reference arm {reference!r} not in this run; it has {', '.join(order)}")
    order = [reference] + [a for a in order if a != reference]
    by_arm: dict[str, list[RunRecord]] = defaultdict(list)
    for record in run.records:
        by_arm[record.arm].append(record)
    arm_summaries = [arm_summary(a, outcomes[a], by_arm[a], run.manifest) for a in order]
    comparisons = [compare_arms(reference, a, outcomes[reference], outcomes[a]) for a in order[1:]]
    floor = any(s.floor for s in arm_summaries)
    warnings = list(run.warnings) + extraction_warnings(arm_summaries)
    absent = [a for a in run.manifest.arm_names if a not in outcomes]
    if absent and not arms:
        warnings.append(
            f"arm(s) {', '.join(absent)} of the run's config have no records yet; "
            "they are missing from every table (is the run still going, or did that arm fail to start?)"
        )
    documents = max((arm.documents for arm in arm_summaries), default=0)
    if comparisons and documents < CALIBRATED_FROM_DOCUMENTS:
        warnings.append(
            f"this run spans {documents} document{'s' * (documents != 1)}: below {CALIBRATED_FROM_DOCUMENTS} "
            "documents the paired intervals and tests are the cluster sign-flip test's, conservative and "
            "wide on few documents (none below 6) "
            f"(docab calibrate --documents {max(documents, 2)} shows how they behave at this size)"
        )
    counts = {a: len(outcomes[a]) for a in order}
    if len(set(counts.values())) > 1:
        warnings.append(
            "arms cover different questions ("
            + ", ".join(f"{a}: {n}" for a, n in counts.items())
            + "); comparisons use the questions both arms answered"
        )
    rows = breakdowns(order, outcomes, reference) if with_breakdowns else []
    summary = schema.Summary(
        runs=[str(s) for s in run.sources],
        run_id=run.manifest.run_id or next(iter(run.records)).run_id,
        floor=floor,
        label=FLOOR_LABEL if floor else "",
        reference_arm=reference,
        confidence=stats.CONFIDENCE,
        arms=arm_summaries,
        reference_rows=reference_rows({a: outcomes[a] for a in order}),
        comparisons=comparisons,
        breakdowns=rows,
        breakdown_note=breakdown_note(rows),
        warnings=warnings,
        prices=price_rows(run.records, run.manifest),
        unrecorded_usd=run.unrecorded_usd,
        interrupted_calls=run.interrupted_calls,
        interrupted_usd=run.interrupted_usd,
        plan=plan,
        version_changes=list(run.version_changes),
    )
    return Report(summary=summary, outcomes={a: outcomes[a] for a in order})


def relabel(records: Iterable[RunRecord], arm: str, new_name: str) -> list[RunRecord]:
    """Records of ``arm`` under another arm name (to compare arms of two different runs)."""
    return [dataclasses.replace(r, arm=new_name) for r in records if r.arm == arm]
