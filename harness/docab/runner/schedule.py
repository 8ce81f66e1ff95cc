"""What to run and in which order: work units, the seeded arm order, shards. Pure functions.

A work unit is one (question, epoch): its arms run back to back, in an order drawn from a seeded
random generator keyed by (seed, question, epoch), so arms are interleaved over time (provider
drift and time of day hit both alike) and the order does not depend on the limit, sharding or
resuming. Units go epoch by epoch, questions in dataset order, so a partial run covers whole
epochs first.

Shards split by question: a question belongs to shard ``sha256(qid) mod N``, so every epoch and
every arm of a question land in the same shard, and shards are stable as the question set grows.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

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
