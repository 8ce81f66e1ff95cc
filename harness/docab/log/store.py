"""A run's folder: ``manifest.json``, append-only ``records.jsonl``, transcripts and images.

``results/<run-id>/``
    ``manifest.json``   the config and its hash, git commit, package versions, dataset version,
                        model ids, dates; one entry per invocation under ``sessions``
                        (schema: :class:`docab.log.manifest.Manifest`)
    ``records.jsonl``   one :class:`~docab.log.records.RunRecord` per line, appended and flushed as
                        each sample finishes, so a killed run loses only what was in flight
    ``transcripts/``    one JSON file per sample (see :mod:`docab.log.transcript`)
    ``images/``         images from transcripts, stored once by hash
    ``logs/``           MCP servers' stderr

Resuming: the config must be the run's (its hash), and the questions and converted documents the run
has used must hold what they held (the manifest's ``contents``: a gold answer corrected or a
document converted again since is refused, unless accepted); the keys of the records already
written are skipped. A last line torn by a kill (no
newline, or not JSON) is cut off before appending, so the file stays one record per line.
Transcripts and images are written to a temporary name and renamed, so they are whole or absent.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TextIO

from docab.errors import RunError
from docab.log.events import Event
from docab.log.identity import ContentChanges, compare_contents, identity_hash, merged_contents
from docab.log.manifest import (
    DataContents,
    DatasetInfo,
    EndpointInfo,
    GitState,
    Manifest,
    ManifestError,
    ModelsInfo,
    Session,
    ShardInfo,
    load_manifest,
)
from docab.log.records import RECORD_VERSION, RunRecord
from docab.log.transcript import image_path, transcript_document
from docab.messages import Image, ToolSpec

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
PACKAGES = (
    "docab",
    "md-vision",
    "markfetch",
    "vision-bridge",
    "docab-mcpguard",
    "mcp",
    "openai",
    "anthropic",
    "google-genai",
    "pydantic",
    "pypdfium2",
    "rich",
)


class StoreError(RunError):
    """The run folder cannot be used as asked; the message says what to do."""


@dataclass(frozen=True)
class SampleTranscript:
    """A finished sample's transcript, before it is written: where it goes (``rel``, relative to the
    run folder) and what :func:`docab.log.transcript.transcript_document` makes of it."""

    rel: str
    run_id: str
    arm: str
    qid: str
    epoch: int
    model: str
    system: str
    tools: tuple[ToolSpec, ...]
    events: list[Event]  # the agent's events in order, then the answer


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def git_commit(path: Path | None = None) -> GitState:
    """The commit of the source tree the harness runs from, and whether it has local changes.

    Asked once per process and folder (two git processes): the manifest and the session both
    record it.
    """
    return _git_commit(path or Path(__file__).resolve().parent)


@functools.lru_cache(maxsize=8)
def _git_commit(where: Path) -> GitState:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return GitState()
    return GitState(commit=commit, dirty=bool(dirty))


def package_versions() -> dict[str, str | None]:
    return dict(_package_versions())


@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


# What RunRecord.from_dict raises on a JSON value that is not a record (a list, a number, a field
# of the wrong type).
_NOT_A_RECORD = (ValueError, TypeError, KeyError, AttributeError)


def _parse_line(raw: bytes) -> Any:
    """One JSON line; raises ValueError (bad UTF-8 or JSON) or RecursionError (nested too deep)."""
    return json.loads(raw.decode("utf-8"))


def read_records(path: Path) -> Iterator[RunRecord]:
    """Every complete record of a ``records.jsonl``, for resuming; a torn last line is ignored."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                return  # torn by a kill: the sample will be run again
            try:
                yield RunRecord.from_dict(_parse_line(raw))
            except (*_NOT_A_RECORD, RecursionError):
                continue  # a line from a crashed writer; resume redoes the sample


def read_records_reporting(path: Path) -> tuple[list[RunRecord], list[str]]:
    """Records from one ``records.jsonl`` and a warning for each line skipped as unreadable (not
    UTF-8, not JSON, nested too deep, not a record).

    For reading a finished run (reports, merges): nothing is skipped silently. Raises
    :class:`StoreError` when the file itself cannot be read.
    """
    records: list[RunRecord] = []
    warnings: list[str] = []
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = _parse_line(line)
        except UnicodeDecodeError:
            warnings.append(f"{path.name}: line {number} is not UTF-8 text; skipped")
            continue
        except RecursionError:
            warnings.append(f"{path.name}: line {number} is JSON nested too deeply to be a record; skipped")
            continue
        except ValueError:
            if number - 1 == last:
                warnings.append(
                    f"{path.name}: the last line is incomplete (a run stopped mid-write); skipped"
                )
            else:
                warnings.append(f"{path.name}: line {number} is not JSON; skipped")
            continue
        try:
            records.append(RunRecord.from_dict(data))
        except _NOT_A_RECORD as exc:
            warnings.append(f"{path.name}: line {number} is not a run record ({exc}); skipped")
    return records, warnings


def same_run(manifest: Manifest, config_hash: str) -> bool:
    """Does the run of ``manifest`` have the identity ``config_hash``? Its own hash says so, or, for a
    manifest an older docab wrote with another identity (one that still counted the endpoint URL),
    the hash recomputed from the config it stores (:func:`docab.log.identity.identity_hash`)."""
    if manifest.config_hash == config_hash:
        return True
    return bool(manifest.config) and identity_hash(manifest.config) == config_hash


def run_identity(manifest: Manifest) -> str:
    """The identity of a manifest's run as this docab hashes it: recomputed from its stored config
    (so runs written before the endpoint left the identity compare by what changes results), its
    stored hash when it stores no config."""
    return identity_hash(manifest.config) if manifest.config else manifest.config_hash


def data_changes(existing: Manifest, manifest: Manifest) -> ContentChanges:
    """What differs between the questions and documents ``existing``'s run has used and those of
    ``manifest`` (:func:`docab.log.identity.compare_contents`); nothing when either did not record
    them (a manifest an older docab wrote, or a caller that does not say)."""
    if existing.contents is None or manifest.contents is None:
        return ContentChanges()
    return compare_contents(existing.contents, manifest.contents)


def resumed(existing: Manifest, manifest: Manifest, session: Session) -> Manifest:
    """``existing`` resumed by ``manifest``'s invocation ``session``: this docab's config hash, the
    contents of the questions and documents used for the first time added, and, when they differ
    from what the run used (a change accepted), the new data's contents and dataset version, with
    the session saying what changed."""
    changes = data_changes(existing, manifest)
    update: dict[str, object] = {"config_hash": manifest.config_hash}
    if manifest.contents is not None:
        update["contents"] = (
            merged_contents(existing.contents, manifest.contents, replace=bool(changes))
            if existing.contents is not None
            else manifest.contents
        )
    if changes:
        update["dataset"] = manifest.dataset
        session = session.model_copy(update={"data_change": changes.describe()})
    return existing.model_copy(update=update).with_session(session)


def resume_notes(existing: Manifest, manifest: Manifest, session: Session) -> list[str]:
    """One line for each thing that differs, on resuming ``existing``, from the run's earlier
    sessions without stopping it: the package versions or the code's commit since its first
    session, and data that changed (reached only when the change is accepted)."""
    notes = []
    changed = version_changes(existing, session)
    if changed:
        notes.append(
            f"versions changed since the run's first session: {', '.join(changed)}; the samples "
            "already recorded ran with the old ones (the manifest's sessions record each)"
        )
    changes = data_changes(existing, manifest)
    if changes:
        notes.append(
            f"{changes.describe()}; accepted: the samples already recorded keep their scores, the "
            "rest run on the new data"
        )
    return notes


def version_changes(existing: Manifest, session: Session) -> list[str]:
    """What ``session`` runs with that the run's first session did not, as "md-vision 0.3.0 →
    0.4.0": the packages both list, and the code's git commit when both know it
    (:meth:`docab.log.manifest.Manifest.version_changes`)."""
    return [change.describe() for change in existing.version_changes(session)]


def inside_run(run_dir: Path, rel: str) -> Path | None:
    """The file a record names (a transcript), if the relative path stays inside the run folder."""
    if Path(rel).is_absolute():
        return None
    root = run_dir.resolve()
    path = (run_dir / rel).resolve()
    return path if path.is_relative_to(root) else None


class RunStore:
    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.records_path = run_dir / RECORDS
        self._handle: IO[bytes] | None = None
        self._made: set[Path] = set()  # folders known to exist (mkdir is slow on some disks)

    def _folder(self, path: Path) -> None:
        if path not in self._made:
            path.mkdir(parents=True, exist_ok=True)
            self._made.add(path)

    # -- manifest -------------------------------------------------------------------------
    def read_manifest(self) -> Manifest | None:
        """The folder's manifest, None when it has none; raises :class:`StoreError` when it cannot
        be read."""
        path = self.dir / MANIFEST
        if not path.exists():
            return None
        try:
            return load_manifest(path)
        except ManifestError as exc:
            raise StoreError(f"{exc}; move the run folder away or repair the file") from None

    def check(self, manifest: Manifest, *, accept_data_change: bool = False) -> Manifest | None:
        """The folder's run, if it has one, when ``manifest`` may resume it; raises
        :class:`StoreError` when it holds a run with another config, or, unless
        ``accept_data_change``, one whose questions or documents differ from ``manifest``'s
        (:func:`data_changes`). Reads only: nothing is created or written, so a start that fails
        later leaves the folder as it was."""
        if self.dir.exists() and not self.dir.is_dir():
            raise StoreError(
                f"cannot create the run folder {self.dir}: a file of that name exists; "
                "choose a results folder that can be written"
            )
        existing = self.read_manifest()
        if existing is not None and not same_run(existing, manifest.config_hash):
            raise StoreError(
                f"{self.dir} holds a run with a different config (hash {existing.config_hash[:12] or 'none'}, "
                f"this config {manifest.config_hash[:12]}); give the run another name, "
                "or move the old folder away"
            )
        changes = data_changes(existing, manifest) if existing is not None else ContentChanges()
        if changes and not accept_data_change:
            raise StoreError(
                f"{self.dir}: {changes.describe()}, so its samples would be scored against two sets "
                "of data; run into a new results folder (--out), or accept the change with "
                "--accept-data-change (the samples already recorded keep their scores)"
            )
        return existing

    def begin(self, manifest: Manifest, *, session: Session, accept_data_change: bool = False) -> Manifest:
        """Create or resume the run, adding ``session``; refuses what :meth:`check` refuses. Returns
        the manifest as written: an existing run keeps its own, with one more session, the hash of
        this docab's identity when an older one wrote another, and the contents of the questions and
        documents used for the first time (:func:`resumed`)."""
        existing = self.check(manifest, accept_data_change=accept_data_change)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # read-only disk, a file where a folder should be, no permission
            raise StoreError(
                f"cannot create the run folder {self.dir}: {exc.strerror or exc}; "
                "choose a results folder that can be written"
            ) from None
        begun = (
            resumed(existing, manifest, session) if existing is not None else manifest.with_session(session)
        )
        try:
            self.write_manifest(begun)
        except OSError as exc:
            raise StoreError(
                f"cannot write {self.dir / MANIFEST}: {exc.strerror or exc}; "
                "choose a results folder that can be written"
            ) from None
        return begun

    def write_manifest(self, manifest: Manifest) -> None:
        _atomic_write(self.dir / MANIFEST, manifest.to_json().encode())

    # -- records --------------------------------------------------------------------------
    def records(self) -> list[RunRecord]:
        return list(read_records(self.records_path))

    def open(self) -> None:
        """Open ``records.jsonl`` for appending, first cutting off a torn last line."""
        self.dir.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(self.records_path)
        self._handle = self.records_path.open("ab")

    def append(self, record: RunRecord) -> None:
        if self._handle is None:
            self.open()
        assert self._handle is not None
        line = json.dumps(record.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        self._handle.write(line.encode("utf-8"))
        self._handle.flush()  # a SIGKILL keeps what reached the OS; power loss is out of scope

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    # -- transcripts and images -----------------------------------------------------------
    def store_image(self, image: Image) -> str:
        rel = image_path(image)
        path = self.dir / rel
        if not path.exists():
            self._folder(path.parent)
            _atomic_write(path, image.data)
        return rel

    def write_transcript(self, rel: str, document: dict[str, Any]) -> None:
        path = self.dir / rel
        self._folder(path.parent)
        _atomic_write(path, json.dumps(document, ensure_ascii=False).encode("utf-8"))

    def commit(self, record: RunRecord, transcript: SampleTranscript) -> None:
        """Write a finished sample: its transcript (and images) first, then its record line.

        A kill between the two leaves a transcript without a record: the sample is run again on
        resume and its transcript rewritten.
        """
        document = transcript_document(
            run_id=transcript.run_id,
            arm=transcript.arm,
            qid=transcript.qid,
            epoch=transcript.epoch,
            model=transcript.model,
            system=transcript.system,
            tools=transcript.tools,
            events=transcript.events,
            store_image=self.store_image,
        )
        self.write_transcript(transcript.rel, document)
        self.append(record)

    def log_file(self, name: str) -> TextIO:
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        return (self.dir / "logs" / name).open("a", encoding="utf-8")


class BackgroundWriter:
    """Commits finished samples to a :class:`RunStore` from one thread, in the order submitted.

    File creation is slow on some disks; writing from a thread keeps the event loop (and every
    sample in flight) from waiting on it. A sample that was submitted but not yet written when the
    process is killed counts as in flight: it is run again on resume. A write error stops the
    writer; the next :meth:`submit` and :meth:`close` raise it.
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._queue: queue.SimpleQueue[tuple[RunRecord, SampleTranscript] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="docab-writer", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:  # close() asks to stop
                return
            if self._error is None:
                try:
                    self.store.commit(*item)
                except BaseException as exc:  # surfaced to the run by submit() and close()
                    self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            raise StoreError(f"could not write to {self.store.dir}: {self._error}") from self._error

    def submit(self, record: RunRecord, transcript: SampleTranscript) -> None:
        self._raise()
        self._queue.put((record, transcript))

    def close(self) -> None:
        """Wait for everything submitted to be written."""
        self._queue.put(None)
        self._thread.join()
        self._raise()


def _cut_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 1))
        if handle.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a partial line from a killed writer.
        block = 1 << 16
        end = size
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            end = start
        handle.truncate(0)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def session_info(
    argv: Sequence[str] | None = None,
    *,
    epochs: int | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    questions: int | None = None,
    first: int | None = None,
    overrides: Sequence[str] = (),
    retry_errors: bool = False,
    endpoints: Sequence[EndpointInfo] = (),
) -> Session:
    """This invocation: its command line, code and host, and the run controls it was given."""
    return Session(
        started_at=utc_now(),
        argv=tuple(sys.argv if argv is None else argv),
        git=git_commit(),
        packages=package_versions(),
        host=platform.node(),
        record_version=RECORD_VERSION,
        epochs=epochs,
        concurrency=concurrency,
        limit=limit,
        first=first,
        questions=questions,
        overrides=tuple(overrides),
        retry_errors=retry_errors,
        endpoints=tuple(endpoints),
    )


def manifest_for(
    *,
    run_id: str,
    config: dict[str, Any],
    config_hash: str,
    dataset: DatasetInfo,
    models: ModelsInfo,
    shard: tuple[int, int] | None,
    contents: DataContents | None = None,
) -> Manifest:
    """A new run's manifest, before its first session; every field a reader relies on is set.
    ``contents``: what its questions and documents hold (``docab.runner.dataset.dataset_contents``),
    compared when the run is resumed."""
    return Manifest(
        run_id=run_id,
        created_at=utc_now(),
        config_hash=config_hash,
        config=config,
        dataset=dataset,
        models=models,
        shard=ShardInfo(index=shard[0], count=shard[1]) if shard else None,
        git=git_commit(),
        packages=package_versions(),
        record_version=RECORD_VERSION,
        contents=contents,
    )
