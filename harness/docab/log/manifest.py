"""The run manifest: what a run folder's ``manifest.json`` holds, one typed schema for writer and readers.

The launcher creates it (:func:`new_manifest`) and the store writes it (:mod:`docab.log.store`); a
resumed run adds one :class:`Session` per invocation; ``docab merge`` lists its parts under
``merged_from``; the report reads the run id, the arm order and each arm's tool-definition cost.
Layout (``MANIFEST_VERSION`` 1)::

    {"version": 1, "run_id", "created_at", "updated_at", "config_hash",
     "config": {...the RunConfig as validated...}, "dataset": {source, name, version},
     "models": {agent, is_baseline, config: {...every model option...}, extractor,
     extractor_config: {...every option of the extractor as it runs...}},
     "shard": {index, count} | null, "git": {commit, dirty}, "packages": {name: version},
     "record_version", "contents": {questions: {qid: {question, answer, answer_format, evidence}},
     documents: {doc_id: digest}} | null, "sessions": [{started_at, finished_at, argv, git,
     packages, host, record_version, epochs, concurrency, limit, first, questions, overrides,
     retry_errors, endpoints: [{role, model, base_url, key_env, headers}], data_change}],
     "mcp_servers": {name: [tool names]},
     "arms": [{name, tools, mcp_servers, prompt, tool_names, tool_definition_chars,
     tool_definition_tokens}], "merged_from": [{path, run_id, shard, sessions, data_change}]}

Reading is lenient where files written before this schema differ: ``arms`` may be a list of names,
a list of tables or a table keyed by arm name (all read as the list of :class:`ArmManifest`), and
fields an older or hand-written file leaves out take empty defaults. Keys this version does not
know are kept as they are and written back (a merge or a resume loses nothing). A manifest from a
newer version is refused.

The models are frozen: a change is a copy (:meth:`Manifest.with_session` and friends), so no
caller edits a manifest another holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from docab.errors import DocabError

MANIFEST_VERSION = 1


class ManifestError(DocabError):
    """A ``manifest.json`` that cannot be read; the message names the file and the problem."""


class _Part(BaseModel):
    # Unknown keys are kept (and written back), so a newer field survives a resume or a merge.
    model_config = ConfigDict(extra="allow", frozen=True)


class GitState(_Part):
    commit: str | None = None  # None: not run from a git checkout
    dirty: bool | None = None  # local changes to tracked files


class DatasetInfo(_Part):
    source: str = ""  # "suite" | "mmlongbench"
    name: str = ""
    version: str = ""


class QuestionDigest(_Part):
    """What a question's score depends on beyond its text and document (both in its qid), each as
    a digest (:func:`docab.log.identity.digest`), so the manifest holds no gold answer."""

    question: str = ""  # the document and the question's text (a qid made elsewhere may not cover them)
    answer: str = ""  # the gold answer
    answer_format: str = ""
    evidence: str = ""  # the evidence pages and sources


class DataContents(_Part):
    """What a run's samples were asked and scored against: each question the run has used and each
    converted document it has read, as first used (resuming compares them: docab.log.identity)."""

    questions: dict[str, QuestionDigest] = Field(default_factory=dict)  # by qid
    # doc_id: digest of its document.md and meta.json; a document not converted yet is left out
    documents: dict[str, str] = Field(default_factory=dict)


class ModelsInfo(_Part):
    agent: str = ""  # provider/model
    is_baseline: bool = False
    config: dict[str, Any] = Field(default_factory=dict)  # every option of the agent's model (JSON)
    extractor: str | None = None  # under the extraction protocol: the extractor's provider/model
    # ... and every option of it as it runs (its endpoint follows the agent's unless it has its own)
    extractor_config: dict[str, Any] | None = None


class ShardInfo(_Part):
    index: int  # 1-based
    count: int


class EndpointInfo(_Part):
    """Where one model role's calls went in a session: transport, not part of the run's identity,
    so a run resumed at another URL keeps its hash and its sessions keep the history."""

    role: str = ""  # "agent" | "extractor"
    model: str = ""  # provider/model
    base_url: str | None = None  # None: the provider's default
    key_env: str = ""  # the variable holding the key ("" for none)
    headers: tuple[str, ...] = ()  # the names of the headers sent (values may hold secrets)


class Session(_Part):
    """One invocation of ``docab run`` (or of the library's ``run``) on the folder."""

    started_at: str = ""  # ISO 8601 UTC
    finished_at: str | None = None  # None: still running, or killed
    argv: tuple[str, ...] = ()
    git: GitState = Field(default_factory=GitState)
    packages: dict[str, str | None] = Field(default_factory=dict)
    host: str = ""
    record_version: int | None = None
    epochs: int | None = None
    concurrency: int | None = None
    limit: int | None = None  # questions spread over documents (seeded)
    first: int | None = None  # the first questions in dataset order
    questions: int | None = None  # questions in this invocation's share (after limit and shard)
    overrides: tuple[str, ...] = ()  # KEY=VALUE changes to the config file (--set, --model, --base-url)
    retry_errors: bool = False  # errored and timed-out samples were run again
    endpoints: tuple[EndpointInfo, ...] = ()  # where each model role's calls went (empty: none, or older)
    data_change: str | None = None  # questions or documents that differed, accepted (--accept-data-change)


DOCAB_COMMIT = "docab's commit"  # the name of a VersionChange of docab's git commit


class VersionChange(_Part):
    """A version a session ran with that differs from the run's first session's: a package's, or
    docab's git commit (``name`` :data:`DOCAB_COMMIT`)."""

    name: str
    before: str | None = None  # None: the package was absent
    after: str | None = None

    def describe(self) -> str:
        """``md-vision 0.3.0 → 0.4.0``, ``docab's commit 1a2b3c4d5e → 6f7a8b9c0d``."""
        if self.name == DOCAB_COMMIT:
            return f"{self.name} {(self.before or '?')[:10]} → {(self.after or '?')[:10]}"
        return f"{self.name} {self.before or 'absent'} → {self.after or 'absent'}"


class SessionVersions(_Part):
    """A session of a run that ran with other versions than the run's first session, and which."""

    session: Session
    number: int  # its place among the sessions of the folder it ran in, from 1
    part: str | None = None  # that folder, when not the run's own (a part docab merge joined, or a shard)
    changes: tuple[VersionChange, ...] = ()

    def describe(self) -> str:
        """``session 3 (started 2026-01-02T03:04:05+00:00, in results/s2): md-vision 0.3.0 → 0.4.0``."""
        where = f", in {self.part}" if self.part else ""
        said = ", ".join(change.describe() for change in self.changes)
        return f"session {self.number} (started {self.session.started_at or '?'}{where}): {said}"


class ArmManifest(_Part):
    """An arm as configured, with what its tool definitions cost on every model call (estimated from
    the specs' JSON, characters / 4: see ``docab.runner.launch.arms_manifest``)."""

    name: str
    tools: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    prompt: str = ""
    tool_names: tuple[str, ...] = ()
    tool_definition_chars: int | None = None
    tool_definition_tokens: int | None = None


class MergedPart(_Part):
    """One run folder joined by ``docab merge``, with its own sessions."""

    path: str
    run_id: str | None = None
    shard: ShardInfo | None = None
    sessions: tuple[Session, ...] = ()
    data_change: str | None = (
        None  # its questions or documents that differed, accepted (--accept-data-change)
    )


class Manifest(_Part):
    version: int = MANIFEST_VERSION
    run_id: str = ""
    created_at: str = ""
    updated_at: str | None = None
    config_hash: str = ""  # sha256 of RunConfig.identity(): what resuming and merging compare
    config: dict[str, Any] = Field(default_factory=dict)  # the RunConfig as validated (JSON)
    dataset: DatasetInfo = Field(default_factory=DatasetInfo)
    models: ModelsInfo = Field(default_factory=ModelsInfo)
    shard: ShardInfo | None = None
    git: GitState = Field(default_factory=GitState)
    packages: dict[str, str | None] = Field(default_factory=dict)
    record_version: int | None = None
    contents: DataContents | None = None  # None: written before docab recorded what its data held
    sessions: tuple[Session, ...] = ()
    mcp_servers: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # server: the tools it offers
    arms: tuple[ArmManifest, ...] = ()  # in the config's order
    merged_from: tuple[MergedPart, ...] = ()

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value > MANIFEST_VERSION:
            raise ValueError(
                f"manifest version {value} was written by a newer docab (this one reads up to "
                f"{MANIFEST_VERSION}); upgrade docab to read it"
            )
        return value

    @field_validator("arms", mode="before")
    @classmethod
    def _one_shape_of_arms(cls, value: object) -> object:
        return arms_as_list(value)

    def arm(self, name: str) -> ArmManifest | None:
        return next((a for a in self.arms if a.name == name), None)

    @property
    def arm_names(self) -> list[str]:
        return [a.name for a in self.arms]

    def with_session(self, session: Session) -> Manifest:
        return self.model_copy(update={"sessions": (*self.sessions, session)})

    def version_changes(self, session: Session) -> tuple[VersionChange, ...]:
        """What ``session`` runs with that the run's first session did not: the packages both list,
        and docab's git commit when both know it (the manifest's own, without sessions)."""
        first = self.sessions[0] if self.sessions else None
        before = first.packages if first is not None and first.packages else self.packages
        commit = (first.git if first is not None else self.git).commit
        changes = [
            VersionChange(name=name, before=before[name], after=now)
            for name, now in session.packages.items()
            if name in before and before[name] != now
        ]
        if commit and session.git.commit and commit != session.git.commit:
            changes.append(VersionChange(name=DOCAB_COMMIT, before=commit, after=session.git.commit))
        return tuple(changes)

    def sessions_with_other_versions(self, *others: tuple[str, Manifest]) -> tuple[SessionVersions, ...]:
        """Every session of the run whose versions differ from its first session's
        (:meth:`version_changes`): its own sessions, those of the parts ``docab merge`` joined
        (``merged_from``), and those of ``others``, further folders of the same run read with it
        (``docab report`` of several shards). A session listed twice (a merged run's first part's are
        also its own) is listed once, under its part."""
        folders: list[tuple[str | None, Manifest]] = [(None, self), *others]
        groups = [
            group
            for folder, manifest in folders
            for group in (
                *((part.path, part.sessions) for part in manifest.merged_from),
                (folder, manifest.sessions),
            )
        ]
        seen: list[Session] = []
        found: list[SessionVersions] = []
        for part, sessions in groups:
            for number, session in enumerate(sessions, start=1):
                if session in seen:
                    continue
                seen.append(session)
                changes = self.version_changes(session)
                if changes:
                    found.append(SessionVersions(session=session, number=number, part=part, changes=changes))
        return tuple(found)

    def with_tools(self, mcp_servers: Mapping[str, Sequence[str]], arms: Sequence[ArmManifest]) -> Manifest:
        """With the tools each MCP server offered at start-up and the arms they make."""
        offered = {name: tuple(tools) for name, tools in mcp_servers.items()}
        return self.model_copy(update={"mcp_servers": offered, "arms": tuple(arms)})

    def finished(self, at: str) -> Manifest:
        """The latest session marked finished at ``at`` (also the manifest's ``updated_at``)."""
        sessions = self.sessions
        if sessions:
            sessions = (*sessions[:-1], sessions[-1].model_copy(update={"finished_at": at}))
        return self.model_copy(update={"sessions": sessions, "updated_at": at})

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2)


def arms_as_list(value: object) -> object:
    """The accepted shapes of ``arms`` as one: a list of tables. Anything else is left for the
    schema to refuse."""
    if value is None:
        return []
    if isinstance(value, Mapping):  # {"fs": {...}, "fs+md": {...}}
        return [
            {**entry, "name": name} if isinstance(entry, Mapping) else {"name": name}
            for name, entry in value.items()
        ]
    if isinstance(value, list | tuple):  # ["fs", "fs+md"] or [{"name": "fs", ...}, ...]
        return [{"name": entry} if isinstance(entry, str) else entry for entry in value]
    return value


def parse_manifest(data: object, *, source: str = "manifest") -> Manifest:
    """A manifest from its JSON value; raises :class:`ManifestError` naming ``source`` and the key."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source} is not a run manifest (a JSON object)")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise ManifestError(f"{source} is not a valid run manifest: {where}: {message}") from None


def load_manifest(path: Path) -> Manifest:
    """Read ``path``; raises :class:`ManifestError` for a file that is unreadable, not JSON or not a
    manifest."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError):
        raise ManifestError(f"{path} is not valid JSON") from None
    return parse_manifest(data, source=str(path))


def readable_manifest(data: Mapping[str, Any]) -> Manifest:
    """``data`` as a manifest, or an empty one when it is not one (for readers that carry on
    without it, like the report, which then orders arms by the records)."""
    try:
        return parse_manifest(data)
    except ManifestError:
        return Manifest()
