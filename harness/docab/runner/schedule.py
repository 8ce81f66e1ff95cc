"""What to run and in which order: the questions of a limit, work units, the seeded arm order,
shards, and which records stand. Pure functions.

``--limit N`` spreads N questions over the documents (:func:`spread_over_documents`): documents in
a seeded order, round-robin, each document's questions in a seeded order. So ``--limit 5`` of a
set with eight questions per document draws from five documents, not one, and a document-clustered
interval can be computed; a larger limit with the same seed keeps every question of a smaller
one, so raising it extends the run. ``--first N`` takes the first N questions in dataset order.

A work unit is one (question, epoch): its arms run back to back, in an order drawn from a seeded
random generator keyed by (seed, question, epoch), so arms are interleaved over time (provider
drift and time of day hit both alike) and the order does not depend on the limit, sharding or
resuming. Units go epoch by epoch, questions in dataset order, so a partial run covers whole
epochs first.

Shards split by question: a question belongs to shard ``sha256(qid) mod N``, so every epoch and
every arm of a question land in the same shard, and shards are stable as the question set grows.

A sample may have several records (a retried error): the newest stands, for resuming as for the
report, the merge, the export and the viewer (:func:`newest_per_key`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from docab.log.records import RunRecord
from docab.runner.dataset import Sample


@dataclass(frozen=True)
class WorkUnit:
    sample: Sample
    epoch: int
    arms: tuple[str, ...]  # in the order they run; arms already recorded are left out


def arm_order(arms: Sequence[str], seed: int, qid: str, epoch: int) -> tuple[str, ...]:
    order = list(arms)
    random.Random(f"{seed}:{qid}:{epoch}").shuffle(order)
    return tuple(order)


def shard_of(qid: str, count: int) -> int:
    """The 1-based shard a question belongs to."""
    digest = hashlib.sha256(qid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(samples: Sequence[Sample], shard: tuple[int, int] | None) -> list[Sample]:
    if shard is None:
        return list(samples)
    index, count = shard
    return [s for s in samples if shard_of(s.qid, count) == index]


def spread_over_documents(samples: Sequence[Sample], count: int, seed: int) -> list[Sample]:
    """``count`` of ``samples``, round-robin over their documents in a seeded order (each
    document's questions in a seeded order too), returned in dataset order."""
    by_document: dict[str, list[Sample]] = {}
    for sample in samples:
        by_document.setdefault(sample.doc_id, []).append(sample)
    documents = sorted(by_document)
    random.Random(f"{seed}:limit").shuffle(documents)
    queues = []
    for doc_id in documents:
        queue = list(by_document[doc_id])
        random.Random(f"{seed}:limit:{doc_id}").shuffle(queue)
        queues.append(queue)
    chosen: set[str] = set()
    depth = 0
    while len(chosen) < count and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(chosen) < count:
                chosen.add(queue[depth].qid)
        depth += 1
    return [s for s in samples if s.qid in chosen]


def newest_per_key(records: Iterable[RunRecord]) -> list[RunRecord]:
    """One record per (arm, question, epoch): the last written (records are appended in order),
    in the order the keys first appeared."""
    newest: dict[tuple[str, str, int], RunRecord] = {}
    for record in records:
        newest[record.key] = record
    return list(newest.values())


def plan(
    samples: Sequence[Sample],
    arms: Sequence[str],
    *,
    epochs: int,
    seed: int,
    done: Collection[tuple[str, str, int]] = (),
) -> list[WorkUnit]:
    """Every (question, epoch) with the arms still to run, in run order."""
    done_set = set(done)
    units: list[WorkUnit] = []
    for epoch in range(epochs):
        for sample in samples:
            order = arm_order(arms, seed, sample.qid, epoch)
            todo = tuple(arm for arm in order if (arm, sample.qid, epoch) not in done_set)
            if todo:
                units.append(WorkUnit(sample, epoch, todo))
    return units
