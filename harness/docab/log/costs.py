"""What a run's records cost: a record's cost as recorded (or priced now, for a record written
before prices were), and the price book of the models a manifest names.

Above :mod:`docab.pricing` (the prices, pure) and beside the records and manifests it reads.
"""

from __future__ import annotations

from docab.log.manifest import Manifest
from docab.log.records import RunRecord
from docab.models.config import ModelConfig, ModelConfigError
from docab.pricing import PriceBook, sample_cost
from docab.pricing.cost import SampleCost


def record_cost(record: RunRecord, book: PriceBook | None = None) -> SampleCost:
    """A record's cost: as recorded, or for a record written before prices were, its usage priced
    with ``book`` (default: the shipped table)."""
    if record.cost is not None:
        return record.cost
    return sample_cost(record.usage, record.cached_tool_usage + record.cached_model_usage, book)


def manifest_prices(manifest: Manifest) -> PriceBook:
    """The prices of the run the manifest describes: its models' ``price`` (or 0 for an offline
    policy or a local server), then docab's table."""
    models = []
    for config in (manifest.models.config, manifest.models.extractor_config):
        if config:
            try:
                models.append(ModelConfig.from_mapping(config))
            except ModelConfigError:
                continue  # a manifest of another docab version: the table alone prices it
    return PriceBook.for_models(models)
