"""A run's identity: what makes two run folders the same run (the manifest's ``config_hash``), and
what its data held (the manifest's ``contents``).

The hash covers everything in the config that can change a result. Left out: the run controls
(:data:`RUN_CONTROLS`), the models' ``price`` and ``cache`` (:data:`UNHASHED_MODEL_OPTIONS`), and
the model tables' transport (:data:`docab.models.config.TRANSPORT_OPTIONS`), held at their
defaults so that a config that never set them hashes as it did before they were left out.
Pure functions of a config as dumped to JSON (``RunConfig.model_dump(mode="json")``, also what a
manifest stores), so a manifest written by an older docab is checked by recomputing from it.

The data is not in the config: the same config may read a ``samples.json`` whose gold answers were
corrected, or a corpus converted again. So the manifest also records, for each question a run has
used, digests of what its score depends on, and for each document it has read, a digest of its
converted files (:class:`docab.log.manifest.DataContents`, made by
``docab.runner.dataset.dataset_contents``). Resuming compares the two
(:func:`compare_contents`): a question or document the earlier sessions never used is not a
change; one they used that differs now is, and the store refuses it unless it is accepted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from docab.log.manifest import DataContents
from docab.models.config import LATER_OPTIONS, TRANSPORT_OPTIONS, ModelConfig
from docab.protocol import PROSE_FALLBACK_AFTER

RUN_CONTROLS = ("concurrency", "epochs", "description", "max_error_share", "max_cost", "breaker")
# Model options that change what a run cost or whether a reply is replayed, never what a record
# means: a price (docab.pricing) and the response cache (docab.models.cache). Left out of the hash,
# so correcting a price or turning the cache on resumes the run.
UNHASHED_MODEL_OPTIONS = ("price", "cache")


def identity_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The run's identity from a config as dumped to JSON (``RunConfig.model_dump(mode="json")``,
    also what a manifest stores under ``config``): without the run controls, and with the model
    tables' transport options (``TRANSPORT_OPTIONS``: base URL, key variable, headers, region,
    concurrency, timeouts, retries) at their defaults, so a config that never set them hashes as it
    did before they were left out, and pointing a run at another URL keeps its identity.

    Pure: a manifest written by an older docab is checked by recomputing this from its stored
    config."""
    identity = {key: value for key, value in config.items() if key not in RUN_CONTROLS}
    if isinstance(identity.get("model"), Mapping):
        identity["model"] = _without_transport(identity["model"])
    answer = identity.get("answer")
    if isinstance(answer, Mapping) and isinstance(answer.get("extractor"), Mapping):
        identity["answer"] = answer = {**answer, "extractor": _without_transport(answer["extractor"])}
    if isinstance(answer, Mapping) and answer.get("prose_fallback_after") == PROSE_FALLBACK_AFTER:
        # At its default it is left out, so configs written before it existed keep their hash.
        identity["answer"] = {k: v for k, v in answer.items() if k != "prose_fallback_after"}
    return identity


def identity_hash(config: Mapping[str, Any]) -> str:
    """sha256 of :func:`identity_of` ``config``, canonical JSON: the manifest's ``config_hash``."""
    canonical = json.dumps(identity_of(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _without_transport(model: Mapping[str, Any]) -> dict[str, Any]:
    table = {key: value for key, value in model.items() if key not in UNHASHED_MODEL_OPTIONS}
    for key in TRANSPORT_OPTIONS:
        if key in LATER_OPTIONS:  # written out only when set: at its default it is absent
            table.pop(key, None)
        elif key in table:
            table[key] = _TRANSPORT_DEFAULTS[key]
    return table


_TRANSPORT_DEFAULTS: dict[str, Any] = {
    key: ModelConfig.model_fields[key].get_default(call_default_factory=True) for key in TRANSPORT_OPTIONS
}


# -- the data's contents -------------------------------------------------------------------------

DIGEST_CHARS = 16  # hex digits kept of a SHA-256: 64 bits, ample to notice a change
EXAMPLES = 3  # question and document ids named in a description of changes
_V = TypeVar("_V")


def digest(*parts: str | bytes) -> str:
    """The first :data:`DIGEST_CHARS` hex digits of the SHA-256 of ``parts``, each prefixed with its
    length, so no two ways of splitting the same text digest alike."""
    sha = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        sha.update(f"{len(data)}:".encode())
        sha.update(data)
    return sha.hexdigest()[:DIGEST_CHARS]


@dataclass(frozen=True)
class ContentChanges:
    """What differs between the data a run's earlier sessions used and the data now: question ids by
    the part that differs, and document ids."""

    questions: tuple[str, ...] = ()  # the question's text or document
    answers: tuple[str, ...] = ()  # the gold answer
    formats: tuple[str, ...] = ()  # the answer format
    evidence: tuple[str, ...] = ()  # the evidence pages or sources
    documents: tuple[str, ...] = ()  # the converted document (document.md, meta.json)

    def __bool__(self) -> bool:
        return any((self.questions, self.answers, self.formats, self.evidence, self.documents))

    def describe(self, than: str = "what the run's earlier sessions used") -> str:
        """One clause: "12 questions' gold answers and 3 documents differ from what the run's earlier
        sessions used (question ids ...; documents ...)"; ``than`` names what they differ from."""
        parts = [
            _count(ids, what)
            for ids, what in (
                (self.answers, ("question's gold answer", "questions' gold answers")),
                (self.formats, ("question's answer format", "questions' answer formats")),
                (self.evidence, ("question's evidence pages", "questions' evidence pages")),
                (self.questions, ("question's text", "questions' texts")),
                (self.documents, ("converted document", "converted documents")),
            )
            if ids
        ]
        one = len(parts) == 1 and parts[0].startswith("1 ")
        qids = sorted({*self.answers, *self.formats, *self.evidence, *self.questions})
        named = [f"questions {_examples(qids)}" if qids else "", _examples(sorted(self.documents))]
        return (
            f"{_joined(parts)} {'differs' if one else 'differ'} from {than} "
            f"({'; '.join(n for n in named if n)})"
        )


def compare_contents(stored: DataContents, current: DataContents) -> ContentChanges:
    """What differs between ``stored`` (the manifest's) and ``current`` (the data now), over the
    questions and documents both hold: one the run never used before is not a change, nor is a
    question left out now (a smaller limit) or a document not converted then or now."""
    questions = [
        (qid, stored.questions[qid], now) for qid, now in current.questions.items() if qid in stored.questions
    ]
    return ContentChanges(
        questions=tuple(qid for qid, old, now in questions if old.question != now.question),
        answers=tuple(qid for qid, old, now in questions if old.answer != now.answer),
        formats=tuple(qid for qid, old, now in questions if old.answer_format != now.answer_format),
        evidence=tuple(qid for qid, old, now in questions if old.evidence != now.evidence),
        documents=tuple(
            doc
            for doc, now in current.documents.items()
            if doc in stored.documents and stored.documents[doc] != now
        ),
    )


def merged_contents(stored: DataContents, current: DataContents, *, replace: bool) -> DataContents:
    """``stored`` with what ``current`` adds (questions and documents used for the first time);
    ``replace``: with ``current``'s entries wherever the two differ (an accepted change)."""

    return DataContents(
        questions=_merged(stored.questions, current.questions, replace=replace),
        documents=_merged(stored.documents, current.documents, replace=replace),
    )


def _merged(old: Mapping[str, _V], new: Mapping[str, _V], *, replace: bool) -> dict[str, _V]:
    return {**old, **{key: value for key, value in new.items() if replace or key not in old}}


def _count(ids: tuple[str, ...], names: tuple[str, str]) -> str:
    return f"{len(ids)} {names[0] if len(ids) == 1 else names[1]}"


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _examples(ids: list[str]) -> str:
    more = f" and {len(ids) - EXAMPLES} more" if len(ids) > EXAMPLES else ""
    return ", ".join(ids[:EXAMPLES]) + more
