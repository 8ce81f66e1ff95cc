"""Which shard a key belongs to: the one rule every sharded command uses.

A key (a question id for ``docab run``, a PDF's file name for ``docab convert``) belongs to shard
``sha256(key) mod N + 1``: shards are numbered 1 to N, every key lands in exactly one, the split
depends on the key alone (not on the order or the size of the set), so it is the same on every
machine and stays put as the set grows.
"""

from __future__ import annotations

import hashlib


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of ``key`` among ``count`` shards."""
    if count < 1:
        raise ValueError(f"a shard count must be at least 1, got {count}")
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
