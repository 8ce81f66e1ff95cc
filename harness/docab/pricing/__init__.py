"""Prices of model tokens in US dollars, and what a sample's usage cost: pure functions over data.

The shipped table (``prices.toml`` beside this module) holds one row per model, as a ``[model]``
name spells it, in USD per million uncached input, cached input, cache-write and output tokens,
with the source page and the date of each row. A run config overrides a row, or prices a model
the table lacks, with ``[model] price = {input = ..., output = ..., cached_input = ...,
cache_write = ...}`` (gateways, other contracts; ``price = 0`` for a free one).

Which price a model's calls get (:meth:`PriceBook.quote`), first match wins:

1. the config's ``price`` of a model the run uses (agent, extractor);
2. an offline policy (``baseline/...``): 0;
3. a model the config sends to a loopback ``base_url`` (a local server): 0;
4. the table's row for the name (a dated snapshot, ``gpt-4o-2024-08-06``, falls back to its
   undated name);
5. otherwise unknown: the cost is None and reports say "price unknown", never 0.

A call that spent no tokens costs 0 whatever its price. Reasoning tokens are part of output and
billed as output; cache reads at the cached-input price (the input price when the row has none),
cache writes at the cache-write price (likewise).
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docab.pricing.cost import SampleCost
from docab.usage import Usage

TABLE_PATH = Path(__file__).with_name("prices.toml")
PER_TOKENS = 1_000_000  # prices are per million tokens

Origin = Literal["config", "offline policy", "local server", "table", "unknown"]


class PriceError(ValueError):
    """A price table or row that cannot be used; the message names the row and the key."""


class Price(BaseModel):
    """USD per million tokens of one model; ``cached_input`` and ``cache_write`` default to ``input``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    source: str = ""  # where the figures come from (a URL); "" in a config means the config
    date: str = ""  # when they were checked: YYYY-MM-DD (or YYYY-MM)
    note: str = ""

    @property
    def free(self) -> bool:
        return not (self.input or self.output or self.cached_input or self.cache_write)

    def usd(self, usage: Usage) -> float:
        """What ``usage`` cost at this price."""
        cached = self.input if self.cached_input is None else self.cached_input
        written = self.input if self.cache_write is None else self.cache_write
        return (
            usage.input_uncached * self.input
            + usage.cache_read * cached
            + usage.cache_write * written
            + usage.output * self.output
        ) / PER_TOKENS


FREE = Price(input=0.0, output=0.0)


@dataclass(frozen=True)
class PriceQuote:
    """The price a model's calls are charged, and where it comes from."""

    model: str
    price: Price | None  # None: unknown
    origin: Origin

    @property
    def known(self) -> bool:
        return self.price is not None


# -- the table ----------------------------------------------------------------------------------------


_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def parse_table(text: str, *, source: str = "price table") -> dict[str, Price]:
    """A price table's TOML (``[models."provider/model"]`` rows) as prices by model name; every
    row must name its source and date. Raises :class:`PriceError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceError(f"{source} is not valid TOML: {exc}") from None
    rows = data.get("models")
    if not isinstance(rows, dict):
        raise PriceError(f'{source} has no [models."provider/model"] rows')
    table: dict[str, Price] = {}
    for name, row in rows.items():
        try:
            price = Price.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PriceError(f"{source}: models.{name!r}.{where}: {first['msg']}") from None
        if not price.source or not _DATE.match(price.date):
            raise PriceError(f"{source}: models.{name!r} must give its source and date (YYYY-MM-DD)")
        table[name] = price
    return table


@cache
def shipped_table() -> Mapping[str, Price]:
    """The table shipped with docab (``docab/pricing/prices.toml``)."""
    return parse_table(TABLE_PATH.read_text(encoding="utf-8"), source=str(TABLE_PATH))


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def table_price(model: str, table: Mapping[str, Price]) -> Price | None:
    """The table's row for ``model``, or for its undated name when it names a dated snapshot."""
    found = table.get(model)
    if found is None and _SNAPSHOT.search(model):
        found = table.get(_SNAPSHOT.sub("", model))
    return found


def is_loopback(url: str | None) -> bool:
    """``url``'s host is this machine (localhost, 127.0.0.0/8, ::1)."""
    if not url:
        return False
    host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- the run's prices -----------------------------------------------------------------------------------


class PricedModel(Protocol):
    """What the book reads of a run's model (a ``docab.models.config.ModelConfig``)."""

    @property
    def name(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def price(self) -> Price | None: ...
    @property
    def base_url(self) -> str | None: ...


@dataclass(frozen=True)
class PriceBook:
    """The prices of one run: the table, and what the config says of the models it uses."""

    table: Mapping[str, Price] = field(default_factory=shipped_table)
    configured: Mapping[str, PriceQuote] = field(default_factory=dict)  # by model name

    @classmethod
    def for_models(cls, models: Iterable[PricedModel], table: Mapping[str, Price] | None = None) -> PriceBook:
        """The book of a run whose models are ``models`` (agent first, then the extractor): their
        ``price``, or 0 for an offline policy or a loopback ``base_url``. A name configured twice
        keeps its first configuration."""
        configured: dict[str, PriceQuote] = {}
        for model in models:
            if model.name in configured:
                continue
            if model.price is not None:
                configured[model.name] = PriceQuote(model.name, model.price, "config")
            elif model.provider == "baseline":
                configured[model.name] = PriceQuote(model.name, FREE, "offline policy")
            elif is_loopback(model.base_url):
                configured[model.name] = PriceQuote(model.name, FREE, "local server")
        return cls(shipped_table() if table is None else table, configured)

    def quote(self, model: str) -> PriceQuote:
        configured = self.configured.get(model)
        if configured is not None:
            return configured
        if model.startswith("baseline/"):
            return PriceQuote(model, FREE, "offline policy")
        found = table_price(model, self.table)
        return PriceQuote(model, found, "table" if found is not None else "unknown")

    def usd(self, usage: Usage) -> float | None:
        """What one call cost; None when its model's price is unknown or its reply reported no
        usage (0 for a call of no tokens)."""
        if not usage.reported:
            return None
        if usage.total == 0:
            return 0.0
        price = self.quote(usage.model).price
        return None if price is None else price.usd(usage)

    def sample_cost(self, usage: Iterable[Usage], cached: Iterable[Usage] = ()) -> SampleCost:
        """What a sample's calls cost per role, and what its cached answers saved."""
        by_role: dict[str, float] = {}
        unpriced: list[str] = []
        for call in usage:
            usd = self.usd(call)
            if usd is None:
                name = call.model if call.reported else f"{call.model} (replies without token usage)"
                if name not in unpriced:
                    unpriced.append(name)
                continue
            by_role[call.role] = by_role.get(call.role, 0.0) + usd
        saved = sum(usd for call in cached if (usd := self.usd(call)) is not None)
        return SampleCost(by_role=by_role, unpriced=tuple(unpriced), cached_usd=saved)


def sample_cost(
    usage: Iterable[Usage], cached: Iterable[Usage] = (), book: PriceBook | None = None
) -> SampleCost:
    """:meth:`PriceBook.sample_cost` with ``book`` (default: the shipped table alone)."""
    return (book or PriceBook()).sample_cost(usage, cached)
