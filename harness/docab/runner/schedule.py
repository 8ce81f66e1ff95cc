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

Shards split by question: a question belongs to shard ``sha256(qid) mod N + 1``
(:func:`docab_benchmark.shards.shard_of`, the rule ``docab convert`` uses for PDFs too), so every
epoch and every arm of a question land in the same shard, and shards are stable as the question
set grows. Shards are numbered from 1: ``i/N`` means shard i of N, 1 <= i <= N, wherever it is
written (``--shard``, ``DOCAB_SHARD``, run folder names, manifests). A scheduler's own numbering is
read by :func:`shard_from_environment`, which knows which of them count from 0.

A sample may have several records (a retried error): the newest stands, for resuming as for the
report, the merge, the export and the viewer (:func:`newest_per_key`).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from docab.errors import RunError
from docab.log.records import RunRecord
from docab.runner.dataset import Sample
from docab_benchmark.shards import shard_of

__all__ = [
    "Shard",
    "ShardError",
    "WorkUnit",
    "arm_order",
    "in_shard",
    "newest_per_key",
    "parse_shard",
    "plan",
    "shard_from_environment",
    "shard_of",
    "spread_over_documents",
]


@dataclass(frozen=True)
class WorkUnit:
    sample: Sample
    epoch: int
    arms: tuple[str, ...]  # in the order they run; arms already recorded are left out


def arm_order(arms: Sequence[str], seed: int, qid: str, epoch: int) -> tuple[str, ...]:
    order = list(arms)
    random.Random(f"{seed}:{qid}:{epoch}").shuffle(order)
    return tuple(order)


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


# -- shards: i/N, and what a scheduler puts in the environment ----------------------------------------

SHARD_VARIABLE = "DOCAB_SHARD"  # i/N, numbered from 1, as --shard takes it
SHARD_COUNT_VARIABLE = "DOCAB_SHARD_COUNT"  # N, for schedulers that give only an index
KUBERNETES_INDEX = "JOB_COMPLETION_INDEX"  # an Indexed Job's pod: 0 .. completions - 1
SLURM_TASK_ID = "SLURM_ARRAY_TASK_ID"
SLURM_TASK_MIN = "SLURM_ARRAY_TASK_MIN"
SLURM_TASK_MAX = "SLURM_ARRAY_TASK_MAX"
SLURM_TASK_STEP = "SLURM_ARRAY_TASK_STEP"
SLURM_TASK_COUNT = "SLURM_ARRAY_TASK_COUNT"


class ShardError(RunError):
    """A shard that cannot be used: a malformed ``i/N``, or scheduler variables that do not say
    which shard this process is. The message names the variable and what to set."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, numbered from 1. ``origin`` says where it was read
    (``DOCAB_SHARD=2/4``, ``Slurm array task 7 of 5-8``), for the line a command prints."""

    index: int
    count: int
    origin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ShardError(f"a shard is i/N with 1 <= i <= N, got {self.index}/{self.count}")

    @property
    def pair(self) -> tuple[int, int]:
        return (self.index, self.count)

    def describe(self) -> str:
        where = f" ({self.origin})" if self.origin else ""
        return f"shard {self.index} of {self.count}{where}"


def parse_shard(text: str, *, origin: str = "") -> Shard:
    """``i/N`` (shard i of N, 1 <= i <= N) as a :class:`Shard`; raises :class:`ShardError`.

    ``0/N`` is refused rather than read as a 0-based index: ``1/4`` would then mean two different
    shards. A 0-based index (Kubernetes' ``JOB_COMPLETION_INDEX``) goes through
    :func:`shard_from_environment`, which adds 1."""
    index_text, sep, count_text = text.strip().partition("/")
    index, count = _whole(index_text), _whole(count_text)
    if not sep or index is None or count is None:
        raise ShardError(f"a shard looks like i/N, e.g. 1/4 for shard 1 of 4; got {text!r}")
    if count < 1:
        raise ShardError(f"the shard count N in i/N must be at least 1, got {text!r}")
    if index == 0:
        raise ShardError(
            f"shards are numbered from 1 (1/{count} to {count}/{count}), got {text!r}; a 0-based index "
            f"such as Kubernetes' {KUBERNETES_INDEX} is read by auto, which adds 1 "
            f"(set {SHARD_COUNT_VARIABLE}={count})"
        )
    if not 1 <= index <= count:
        raise ShardError(f"a shard is i/N with 1 <= i <= N, got {text!r}")
    return Shard(index, count, origin)


def shard_from_environment(env: Mapping[str, str]) -> Shard:
    """The shard this process is, read from the variables a scheduler sets; raises :class:`ShardError`
    naming the variable to set when they do not say.

    In order: ``DOCAB_SHARD=i/N`` (explicit, 1-based, wins over the rest); a Slurm array task
    (``SLURM_ARRAY_TASK_ID`` with ``SLURM_ARRAY_TASK_MIN`` and ``SLURM_ARRAY_TASK_COUNT`` or
    ``SLURM_ARRAY_TASK_MAX``, and ``SLURM_ARRAY_TASK_STEP``): the k-th task id of the array is shard
    k, whatever the array's first id (``--array=0-3`` and ``--array=1-4`` both give shards 1..4); a
    Kubernetes Indexed Job pod (``JOB_COMPLETION_INDEX``, 0-based, with ``DOCAB_SHARD_COUNT`` set to
    the Job's ``spec.completions``, which Kubernetes does not put in the environment): index k is
    shard k + 1. ``DOCAB_SHARD_COUNT``, when set, must agree with the count found."""
    declared = _declared_count(env)
    explicit = env.get(SHARD_VARIABLE, "").strip()
    if explicit:
        shard = parse_shard(explicit, origin=f"{SHARD_VARIABLE}={explicit}")
    else:
        slurm = env.get(SLURM_TASK_ID, "").strip()
        kubernetes = env.get(KUBERNETES_INDEX, "").strip()
        if slurm and kubernetes:
            raise ShardError(
                f"both {SLURM_TASK_ID} and {KUBERNETES_INDEX} are set, so the scheduler is ambiguous; "
                f"set {SHARD_VARIABLE}=i/N to say which shard this is"
            )
        if slurm:
            shard = _slurm_shard(env, slurm)
        elif kubernetes:
            shard = _kubernetes_shard(kubernetes, declared)
        else:
            hint = (
                "; this Slurm job is not an array (submit it with sbatch --array=1-N)"
                if env.get("SLURM_JOB_ID")
                else ""
            )
            raise ShardError(
                f"no shard in the environment: set {SHARD_VARIABLE}=i/N, or run as a Slurm array task "
                f"({SLURM_TASK_ID}) or a Kubernetes Indexed Job pod ({KUBERNETES_INDEX} with "
                f"{SHARD_COUNT_VARIABLE}){hint}"
            )
    if declared is not None and declared != shard.count:
        raise ShardError(
            f"{SHARD_COUNT_VARIABLE}={declared} disagrees with {shard.describe()}; unset it or make them agree"
        )
    return shard


def _whole(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _number(env: Mapping[str, str], name: str) -> int | None:
    """A variable holding a whole number, None when unset; ShardError when it holds anything else."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    value = _whole(raw)
    if value is None:
        raise ShardError(f"{name} must be a whole number, got {raw!r}")
    return value


def _declared_count(env: Mapping[str, str]) -> int | None:
    count = _number(env, SHARD_COUNT_VARIABLE)
    if count is not None and count < 1:
        raise ShardError(f"{SHARD_COUNT_VARIABLE} must be at least 1, got {count}")
    return count


def _kubernetes_shard(raw: str, count: int | None) -> Shard:
    index = _whole(raw)
    if index is None:
        raise ShardError(f"{KUBERNETES_INDEX} must be a whole number, got {raw!r}")
    if count is None:
        raise ShardError(
            f"{KUBERNETES_INDEX}={index} is set (a Kubernetes Indexed Job) but not the number of shards, "
            f"which Kubernetes does not put in the environment: set {SHARD_COUNT_VARIABLE} to the Job's "
            "spec.completions"
        )
    if index >= count:
        raise ShardError(
            f"{KUBERNETES_INDEX}={index} counts from 0, so it must be below {SHARD_COUNT_VARIABLE}={count}"
        )
    return Shard(index + 1, count, f"{KUBERNETES_INDEX}={index} of {count}, counted from 0")


def _slurm_shard(env: Mapping[str, str], raw: str) -> Shard:
    task = _whole(raw)
    if task is None:
        raise ShardError(f"{SLURM_TASK_ID} must be a whole number, got {raw!r}")
    first = _number(env, SLURM_TASK_MIN)
    last = _number(env, SLURM_TASK_MAX)
    step = _number(env, SLURM_TASK_STEP) or 1
    total = _number(env, SLURM_TASK_COUNT)
    if first is None or (last is None and total is None):
        raise ShardError(
            f"{SLURM_TASK_ID} is set without the array's range: shards need {SLURM_TASK_MIN} and "
            f"{SLURM_TASK_COUNT} or {SLURM_TASK_MAX} (Slurm sets them in every array task), or set "
            f"{SHARD_VARIABLE}=i/N"
        )
    span = None if last is None else (last - first) // step + 1
    irregular = last is not None and (last < first or (total is not None and span != total))
    if irregular:
        raise ShardError(
            f"the Slurm array is not one evenly spaced range ({SLURM_TASK_MIN}={first}, "
            f"{SLURM_TASK_MAX}={last}, {SLURM_TASK_STEP}={step}, {SLURM_TASK_COUNT}={total}): submit "
            f"it as --array=1-N, or set {SHARD_VARIABLE}=i/N"
        )
    count = total if total is not None else span
    assert count is not None  # one of them is set, checked above
    offset = task - first
    if offset < 0 or offset % step or offset // step >= count:
        raise ShardError(
            f"{SLURM_TASK_ID}={task} is not one of the array's {count} task ids from {first} in steps of "
            f"{step}; set {SHARD_VARIABLE}=i/N"
        )
    shown = f"{first}-{first + (count - 1) * step}" + (f":{step}" if step != 1 else "")
    return Shard(offset // step + 1, count, f"Slurm array task {task} of {shown}")
