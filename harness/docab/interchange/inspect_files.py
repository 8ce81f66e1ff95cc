"""Inspect eval log files: a run folder written as them, and them read as a run.

The thin file layer around :mod:`docab.interchange.inspect_log` (which converts, and does no I/O):

- :func:`write_run_logs` writes one log per arm, ``<arm>-<eval id>.eval``, reading each record's
  transcript and images from the run folder it came from;
- :func:`read_logs` reads such sources into records, one arm per log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from inspect_ai.log import EvalLog
from pydantic import ValidationError

from docab.errors import DocabError
from docab.interchange import is_log_file
from docab.interchange.inspect_log import (
    DOCAB_KEY,
    data_url,
    eval_log,
    log_arm,
    log_arm_index,
    records_from_log,
)
from docab.log.events import Transcript
from docab.log.manifest import ArmManifest, Manifest
from docab.log.records import RunRecord

LogFormat = Literal["eval", "json"]
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class InspectLogError(DocabError):
    """Inspect logs that cannot be written or read; the message names the file and the cause."""


def log_file_name(arm: str, fmt: LogFormat, eval_id: str) -> str:
    """``<arm>-<eval id>.<fmt>``, the arm's name made safe for a file (with a hash of it when it had
    to change) and the log's own ``eval_id`` (the same for the same run and arm, so exporting again
    replaces the file)."""
    safe = _UNSAFE.sub("_", arm).strip("._") or "arm"
    if safe != arm:
        safe += "-" + hashlib.sha256(arm.encode()).hexdigest()[:8]
    return f"{safe}-{eval_id}.{fmt}"


class RunFiles:
    """A run's transcripts and images, looked up in each of its folders (shards merge into one run)."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = [f.resolve() for f in folders]
        self.problems: list[str] = []

    def _inside(self, folder: Path, relative: str) -> Path | None:
        candidate = (folder / relative).resolve()
        if candidate.is_relative_to(folder) and candidate.is_file():
            return candidate
        return None

    def transcript(self, record: RunRecord) -> Transcript | None:
        if not record.transcript:
            return None
        for folder in self.folders:
            path = self._inside(folder, record.transcript)
            if path is None:
                continue
            try:
                if path.stat().st_size > MAX_TRANSCRIPT_BYTES:
                    raise ValueError("larger than 64 MiB")
                return Transcript.model_validate_json(path.read_bytes())
            except (OSError, ValueError, ValidationError) as exc:
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                self.problems.append(
                    f"{record.transcript}: unreadable transcript ({reason}); exported without it"
                )
                return None
        self.problems.append(f"{record.transcript}: transcript missing; exported without it")
        return None

    def image_url(self, relative: str) -> str | None:
        for folder in self.folders:
            path = self._inside(folder, relative)
            if path is not None:
                try:
                    return data_url(path.name, path.read_bytes())
                except OSError:
                    return None
        return None


def write_run_logs(
    folders: Sequence[Path],
    manifest: Manifest,
    records: Iterable[RunRecord],
    out_dir: Path,
    fmt: LogFormat = "eval",
) -> tuple[list[Path], list[str]]:
    """One Inspect log per arm into ``out_dir``; returns the files written and problems met (a missing
    transcript is exported without its messages). Raises :class:`InspectLogError`."""
    from inspect_ai.log import write_eval_log

    by_arm: dict[str, list[RunRecord]] = {}
    for record in records:
        by_arm.setdefault(record.arm, []).append(record)
    files = RunFiles(folders)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InspectLogError(f"could not create {out_dir}: {exc.strerror or exc}") from None
    written: list[Path] = []
    for arm, arm_records in by_arm.items():
        log = eval_log(
            arm, arm_records, manifest=manifest, transcript_of=files.transcript, image_url=files.image_url
        )
        target = out_dir / log_file_name(arm, fmt, log.eval.eval_id)
        try:
            write_eval_log(log, str(target), format=fmt)
        except OSError as exc:
            raise InspectLogError(f"could not write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return written, files.problems


def log_files(sources: Sequence[Path]) -> list[Path]:
    """The log files the sources name: files as given, folders' logs by name."""
    found: list[Path] = []
    for source in sources:
        if source.is_dir():
            found += sorted(p for p in source.iterdir() if is_log_file(p))
        else:
            found.append(source)
    return found


@dataclass(frozen=True)
class InspectRun:
    """Inspect logs read as one run: records of every log, arms in the order of the logs."""

    run_id: str
    arms: tuple[str, ...]
    models: tuple[str, ...]
    records: tuple[RunRecord, ...]
    warnings: tuple[str, ...]
    # Each arm as docab's export declared it (``eval.metadata["docab"]["arm_config"]``: its tools
    # and what their definitions cost per call), else its name alone.
    arm_configs: tuple[ArmManifest, ...] = ()


def read_logs(sources: Sequence[Path]) -> InspectRun:
    """Read the Inspect logs ``sources`` name (files or folders of them), arms in the order of their
    config (``log_arm_index``), then by creation. Raises :class:`InspectLogError`."""
    from inspect_ai.log import read_eval_log

    paths = log_files(sources)
    if not paths:
        raise InspectLogError(f"no Inspect logs (.eval) in {', '.join(str(s) for s in sources)}")
    logs = []
    for path in paths:
        try:
            logs.append((path, read_eval_log(str(path))))
        except Exception as exc:  # the reader's failures are many (zip, JSON, schema): each is a bad file
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InspectLogError(f"{path} is not a readable Inspect log ({first[:200]})") from None
    logs.sort(key=lambda item: (log_arm_index(item[1]), item[1].eval.created, str(item[0])))
    arms: list[str] = []
    arm_configs: list[ArmManifest] = []
    models: list[str] = []
    run_ids: list[str] = []
    records: list[RunRecord] = []
    warnings: list[str] = []
    for path, log in logs:
        if log.status != "success":
            warnings.append(
                f"{path.name}: the eval's status is {log.status}; its samples are read as they are"
            )
        arm = log_arm(log)
        if arm in arms:
            raise InspectLogError(
                f"{path} holds the arm {arm!r} again; give one log per arm (or compare the two runs with "
                "docab compare)"
            )
        arms.append(arm)
        arm_configs.append(declared_arm(log, arm))
        models.append(log.eval.model)
        run_ids.append(log.eval.run_id)
        found, problems = records_from_log(log)
        records += found
        warnings += [f"{path.name}: {p}" for p in problems]
    run_id = run_ids[0] if len(set(run_ids)) == 1 else " + ".join(dict.fromkeys(run_ids))
    return InspectRun(
        run_id,
        tuple(arms),
        tuple(dict.fromkeys(models)),
        tuple(records),
        tuple(warnings),
        tuple(arm_configs),
    )


def declared_arm(log: EvalLog, arm: str) -> ArmManifest:
    """The arm as a docab export declared it in the log's metadata, else its name alone."""
    meta = (log.eval.metadata or {}).get(DOCAB_KEY)
    declared = meta.get("arm_config") if isinstance(meta, dict) else None
    if isinstance(declared, dict) and declared.get("name") == arm:
        try:
            return ArmManifest.model_validate(declared)
        except ValidationError:
            pass
    return ArmManifest(name=arm)
