"""A run's identity: what makes two run folders the same run (the manifest's ``config_hash``).

The hash covers everything in the config that can change a result. Left out: the run controls
(:data:`RUN_CONTROLS`), the models' ``price`` and ``cache`` (:data:`UNHASHED_MODEL_OPTIONS`), and
the model tables' transport (:data:`docab.models.config.TRANSPORT_OPTIONS`), held at their
defaults so that a config that never set them hashes as it did before they were left out.
Pure functions of a config as dumped to JSON (``RunConfig.model_dump(mode="json")``, also what a
manifest stores), so a manifest written by an older docab is checked by recomputing from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

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
