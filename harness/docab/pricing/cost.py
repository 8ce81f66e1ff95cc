"""What one sample cost in US dollars, per usage role: the optional ``cost`` of a run record.

Computed when the record is written (:func:`docab.pricing.sample_cost`, from the record's usage and
the prices in force: the shipped table and the config's ``[model] price``). Calls of a model with
no known price are left out of ``by_role`` and named in ``unpriced``: the sample's total is then
unknown (None), never a silent 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SampleCost:
    # USD per usage role (agent, tool-side, extractor), over the calls whose price is known
    by_role: dict[str, float] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()  # models of calls with tokens and no known price
    # What this sample's answers served from a cache (tools, model responses) cost when first
    # computed, priced now: what the cache saved; never part of ``by_role``.
    cached_usd: float = 0.0

    @property
    def total(self) -> float | None:
        """USD over every role; None when a call's price is unknown."""
        return None if self.unpriced else sum(self.by_role.values())

    @property
    def priced(self) -> float:
        """USD over the calls whose price is known (a lower bound when some are not)."""
        return sum(self.by_role.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "by_role": dict(self.by_role),
            "unpriced": list(self.unpriced),
            "cached_usd": self.cached_usd,
            "total": self.total,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleCost:
        by_role = data.get("by_role") or {}
        return cls(
            by_role={str(role): float(usd) for role, usd in by_role.items()},
            unpriced=tuple(str(m) for m in data.get("unpriced") or ()),
            cached_usd=float(data.get("cached_usd") or 0.0),
        )
