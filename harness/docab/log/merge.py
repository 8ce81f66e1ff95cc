"""Join run folders of one config (the shards of a run, typically) into one run folder.

Records are united by their key (arm, question, epoch): as in ``docab report``, the last copy of a
key wins (a folder named later, or the output's own records before the parts); every other copy
is counted as a duplicate and a warning names any that disagree, except a copy that ended in an
error or timeout followed by a newer record of the sample: that is a retry (``docab run
--retry-errors``), and the newer record simply stands. Lines that are not records are
skipped with a warning, and a transcript path that leaves its run folder is not followed. The
output folder's lock (``run.lock``, :mod:`docab.log.lock`) is held while writing: an output whose
run is live is refused, and a part still being written is named in a warning. Transcripts of the kept
records and every image are copied; the merged manifest keeps the first part's config and lists
the parts with their own manifests' sessions. Merging into a folder that already holds the same
run adds to it, so merging again after a late shard finishes is safe. Shards (the manifests'
``shard`` records) must make up the run, each once: a missing or repeated shard is refused unless
``allow_partial`` (``--allow-partial``), and the report of such a run names the missing shards.

The parts must also have been run on the same data, as a resume must (``docab.log.store``): a
question or converted document that two parts (or a part and the output's run) both used, recorded
in their manifests' ``contents`` with different digests, is refused, naming how many and which,
unless ``accept_data_change`` (``--accept-data-change``); then the part says what differed
(``merged_from[].data_change``). Parts covering different questions or documents are no change, and
a manifest without ``contents`` (an older docab's) is not compared. The merged manifest holds the
union of the parts' contents, a later part's entry standing where they differ.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docab.errors import DocabError
from docab.log.identity import EXAMPLES, ContentChanges, compare_contents, merged_contents
from docab.log.lock import RunBusy, RunLock, busy_message
from docab.log.manifest import DataContents, DatasetInfo, Manifest, MergedPart, ShardInfo
from docab.log.records import RunRecord
from docab.log.store import (
    MANIFEST,
    RECORDS,
    RunStore,
    StoreError,
    inside_run,
    read_records_reporting,
    run_identity,
    utc_now,
)

RETRIED = ("error", "timeout")  # statuses a newer record of the same sample replaces as a retry


@dataclass(frozen=True)
class ShardCoverage:
    """Which shards of a sharded run a set of parts holds (from their manifests' ``shard`` records)."""

    count: int  # N of "i/N"; 0 when no part is a shard
    present: tuple[int, ...] = ()
    missing: tuple[int, ...] = ()
    duplicated: tuple[int, ...] = ()  # shards given more than once among the new parts
    counts: tuple[int, ...] = ()  # every N seen: more than one means parts of different splits

    @property
    def complete(self) -> bool:
        return not self.missing and not self.duplicated and len(self.counts) <= 1

    def describe(self) -> str:
        """``shard 2 of 3 is missing``, ``shard 1 of 2 is given twice``, ... in one sentence."""
        said = []
        if len(self.counts) > 1:
            said.append(
                "the parts split the run differently (into " + " and ".join(map(str, self.counts)) + ")"
            )
        if self.missing:
            said.append(
                f"{_shards(self.missing)} of {self.count} {'is' if len(self.missing) == 1 else 'are'} missing"
            )
        if self.duplicated:
            said.append(
                f"{_shards(self.duplicated)} of {self.count} {'is' if len(self.duplicated) == 1 else 'are'} given twice"
            )
        return "; ".join(said)


def _shards(indices: Sequence[int]) -> str:
    return ("shard " if len(indices) == 1 else "shards ") + ", ".join(map(str, indices))


def shard_coverage(
    new: Sequence[ShardInfo | None], earlier: Sequence[ShardInfo | None] = ()
) -> ShardCoverage:
    """The shards ``new`` parts hold, with those an output already merged (``earlier``: merging a
    late shard into it again is no duplicate). Pure: parts that are not shards are not counted."""
    shards = [s for s in (*earlier, *new) if s is not None]
    if not shards:
        return ShardCoverage(count=0)
    counts = tuple(sorted({s.count for s in shards}))
    count = max(counts)
    present = sorted({s.index for s in shards})
    seen: set[int] = set()
    duplicated: set[int] = set()
    for shard in new:
        if shard is None:
            continue
        if shard.index in seen:
            duplicated.add(shard.index)
        seen.add(shard.index)
    return ShardCoverage(
        count=count,
        present=tuple(present),
        missing=tuple(i for i in range(1, count + 1) if i not in present),
        duplicated=tuple(sorted(duplicated)),
        counts=counts,
    )


def merged_coverage(manifest: Manifest) -> ShardCoverage:
    """The shard coverage of a merged run, from its manifest's parts (for the report)."""
    return shard_coverage([], [part.shard for part in manifest.merged_from])


class MergeError(DocabError):
    """The parts cannot be merged; the message says why."""


@dataclass(frozen=True)
class DataConflict:
    """A run folder whose questions or documents differ from those of the folders before it."""

    folder: Path
    changes: ContentChanges
    than: str  # what it differs from, to complete "differ from ..."
    dataset: DatasetInfo  # its manifest's dataset

    def describe(self) -> str:
        return f"{self.folder}: {self.changes.describe(than=self.than)}"


@dataclass(frozen=True)
class DataCheck:
    """What the manifests of folders merged in order recorded of their data: the union of their
    ``contents`` (None when none recorded any) and each folder that differs from those before it."""

    contents: DataContents | None
    conflicts: tuple[DataConflict, ...] = ()

    def refusal(self) -> str:
        """One sentence: which folders differ, how many questions and documents and which, what to do."""
        which = "; ".join(conflict.describe() for conflict in self.conflicts)
        return (
            f"the parts were run on different data: {which}, so the merged run's samples would be "
            "scored against two sets of data; merge parts run on the same data, or merge anyway with "
            "--accept-data-change (each sample keeps its score, and the manifest records what differed)"
        )


def data_check(folders: Sequence[tuple[Path, Manifest]]) -> DataCheck:
    """Compare the data ``folders``' manifests recorded (``contents``), in order: a question or
    document a folder shares with the folders before it and whose digests differ is a conflict;
    one only it used is not. Folders without ``contents`` (an older docab's) are left out. Pure."""
    union: DataContents | None = None
    conflicts: list[DataConflict] = []
    for index, (folder, manifest) in enumerate(folders):
        if manifest.contents is None:
            continue
        if union is not None:
            changes = compare_contents(union, manifest.contents)
            if changes:
                before = [str(f) for f, _ in folders[:index]]
                more = f" and {len(before) - EXAMPLES} more" if len(before) > EXAMPLES else ""
                than = f"what {', '.join(before[:EXAMPLES])}{more} recorded"
                conflicts.append(DataConflict(folder, changes, than, manifest.dataset))
        union = (
            manifest.contents if union is None else merged_contents(union, manifest.contents, replace=True)
        )
    return DataCheck(union, tuple(conflicts))


@dataclass
class MergeResult:
    records: int
    duplicates: int
    warnings: list[str] = field(default_factory=list)
    missing_shards: tuple[int, ...] = ()  # with allow_partial: the shards the merged run lacks


def _manifest(folder: Path) -> Manifest:
    try:
        manifest = RunStore(folder).read_manifest()
    except StoreError as exc:
        raise MergeError(str(exc)) from None
    if manifest is None:
        raise MergeError(f"{folder} is not a run folder (no {MANIFEST})")
    return manifest


def merge_runs(
    parts: Sequence[Path], out: Path, *, allow_partial: bool = False, accept_data_change: bool = False
) -> MergeResult:
    """Merge ``parts`` into ``out``. Parts that are shards (``--shard i/N``) must make up the whole
    run, each once (with the shards ``out`` already holds): a missing, repeated or differently split
    shard is refused unless ``allow_partial``, and the result then names the missing shards. Parts
    (and ``out``'s run) whose recorded data differ (:func:`data_check`) are refused unless
    ``accept_data_change``."""
    if not parts:
        raise MergeError("give at least one run folder to merge")
    resolved_out = out.resolve()
    if any(part.resolve() == resolved_out for part in parts):
        raise MergeError(f"{out} is both a part and the output; choose another --out")
    lock = RunLock(out)
    verdict = lock.peek()  # reads only: a live run's folder is refused before anything is read
    if verdict.action == "busy":
        raise MergeError(busy_message(out, verdict).replace("add --wait to start", "merge again"))
    manifests = [_manifest(part) for part in parts]
    hashes = {run_identity(m) for m in manifests}
    if len(hashes) != 1:
        listing = ", ".join(
            f"{p} ({m.config_hash[:12] or 'no hash'})" for p, m in zip(parts, manifests, strict=True)
        )
        raise MergeError(f"the parts were run with different configs: {listing}")
    sources: list[Path] = list(parts)
    existing = _manifest(out) if (out / MANIFEST).exists() else None
    if existing is not None:
        if run_identity(existing) not in hashes:
            raise MergeError(f"{out} already holds a run with another config; choose another --out")
        sources.insert(0, out)
    elif out.exists() and any(out.iterdir()):
        raise MergeError(f"{out} exists and is not an empty folder or a run of this config")
    checked = data_check(
        [*([(out, existing)] if existing is not None else []), *zip(parts, manifests, strict=True)]
    )
    if checked.conflicts and not accept_data_change:
        raise MergeError(checked.refusal())
    merged_shards = [part.shard for part in existing.merged_from] if existing is not None else []
    coverage = shard_coverage([m.shard for m in manifests], merged_shards)
    if not coverage.complete and not allow_partial:
        raise MergeError(
            f"{coverage.describe()}; merge every shard once, or add --allow-partial to merge these "
            "(the report then names the missing shards)"
        )

    kept: dict[tuple[str, str, int], tuple[RunRecord, Path]] = {}
    duplicates = 0
    warnings: list[str] = [
        f"{part} is still being written ({peeked.holder.describe() if peeked.holder else 'by another process'}); "
        "merge again when it has finished"
        for part in parts
        if (peeked := RunLock(part).peek()).action == "busy"
    ]
    for source in sources:
        if not (source / RECORDS).exists():
            warnings.append(f"{source} has no {RECORDS}; nothing taken from it")
            continue
        try:
            found, problems = read_records_reporting(source / RECORDS)
        except StoreError as exc:
            raise MergeError(str(exc)) from None
        warnings += [f"{source}: {problem}" for problem in problems]
        for record in found:
            if record.key in kept and kept[record.key][0].status not in RETRIED:
                duplicates += 1
                earlier = kept[record.key][0]
                if (earlier.status, earlier.score) != (record.status, record.score):
                    warnings.append(
                        f"{record.arm} {record.qid} epoch {record.epoch}: {source} has status {record.status} "
                        f"score {record.score}, replacing the earlier {earlier.status} score {earlier.score}"
                    )
            kept[record.key] = (record, source)
    try:
        lock.acquire(wait=False)  # held while writing: no run starts in the folder meanwhile
    except RunBusy as exc:
        raise MergeError(str(exc).replace("add --wait to start", "merge again")) from None
    except OSError as exc:
        raise MergeError(f"could not write the merged run into {out}: {exc.strerror or exc}") from None
    if not coverage.complete:
        warnings.append(f"a partial run: {coverage.describe()}")
    warnings += [f"accepted: {conflict.describe()}" for conflict in checked.conflicts]
    try:
        result = _write_merged(parts, manifests, sources, out, existing, kept, duplicates, warnings, checked)
        return dataclasses.replace(result, missing_shards=coverage.missing)
    except OSError as exc:
        raise MergeError(f"could not write the merged run into {out}: {exc.strerror or exc}") from None
    finally:
        lock.release()


def _write_merged(
    parts: Sequence[Path],
    manifests: list[Manifest],
    sources: list[Path],
    out: Path,
    existing: Manifest | None,
    kept: dict[tuple[str, str, int], tuple[RunRecord, Path]],
    duplicates: int,
    warnings: list[str],
    checked: DataCheck,
) -> MergeResult:
    run_id = out.name
    out.mkdir(parents=True, exist_ok=True)
    for source in sources:
        if source == out:
            continue
        images = source / "images"
        if images.is_dir():
            (out / "images").mkdir(exist_ok=True)
            for image in images.iterdir():
                target = out / "images" / image.name
                if not target.exists():
                    shutil.copy2(image, target)
    lines = []
    for record, source in kept.values():
        if record.transcript and source != out:
            src, dst = inside_run(source, record.transcript), inside_run(out, record.transcript)
            if src is None or dst is None:
                warnings.append(
                    f"{source}: transcript path {record.transcript!r} leaves the run folder; not copied"
                )
            elif src.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            else:
                warnings.append(f"{source}: transcript {record.transcript} is missing")
        lines.append(
            json.dumps(dataclasses.replace(record, run_id=run_id).to_dict(), ensure_ascii=False) + "\n"
        )
    tmp = out / f".{RECORDS}.tmp"
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(out / RECORDS)

    base = existing or manifests[0]
    merged_from = list(base.merged_from) if existing else []
    changed = {conflict.folder: conflict for conflict in checked.conflicts}
    for part, manifest in zip(parts, manifests, strict=True):
        conflict = changed.get(part)
        merged_from.append(
            MergedPart(
                path=str(part),
                run_id=manifest.run_id,
                shard=manifest.shard,
                sessions=manifest.sessions,
                data_change=conflict.changes.describe(than=conflict.than) if conflict else None,
            )
        )
    update: dict[str, object] = {
        "run_id": run_id,
        "shard": None,
        "merged_from": tuple(merged_from),
        "updated_at": utc_now(),
        "contents": checked.contents,
    }
    if checked.conflicts:  # accepted: the dataset of the last part that differed, as its contents stand
        update["dataset"] = checked.conflicts[-1].dataset
    merged = base.model_copy(update=update)
    RunStore(out).write_manifest(merged)
    return MergeResult(records=len(kept), duplicates=duplicates, warnings=warnings)
