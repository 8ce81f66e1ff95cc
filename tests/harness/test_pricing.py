"""Prices: the shipped table, the config's override, and what a sample cost per role."""

from __future__ import annotations

import math

import pytest

from docab.config import CONFIG_DIR, load_config, parse_config
from docab.errors import ConfigError
from docab.log.records import RunRecord
from docab.models.config import ModelConfig
from docab.pricing import (
    Price,
    PriceBook,
    PriceError,
    is_loopback,
    parse_table,
    sample_cost,
    shipped_table,
)
from docab.pricing.cost import SampleCost
from docab.runner.context import price_book
from docab.usage import Usage


def test_every_row_of_the_shipped_table_cites_its_source_and_date() -> None:
    table = shipped_table()
    assert table
    for name, price in table.items():
        assert price.source.startswith("https://"), name
        assert len(price.date) in (7, 10) and price.date[:4].isdigit(), name
        assert price.output > 0 and price.input > 0, name


def test_the_models_of_the_shipped_configs_have_a_price_or_are_free() -> None:
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        config = load_config(path)
        book = price_book(config)
        for model in {config.model.name, config.extractor_model.name}:
            quote = book.quote(model)
            assert quote.known, f"{path.name}: {model} has no price"
        if config.model.provider == "baseline":
            assert book.quote(config.model.name).origin == "offline policy"
        if config.model.base_url and is_loopback(config.model.base_url):
            assert book.quote(config.model.name).origin == "local server"


def test_a_usage_is_priced_per_token_kind() -> None:
    price = Price(input=2.5, cached_input=1.25, cache_write=3.75, output=10)
    usage = Usage(
        input_uncached=1_000_000, cache_read=2_000_000, cache_write=1_000_000, output=500_000, reasoning=100
    )
    assert price.usd(usage) == pytest.approx(2.5 + 2 * 1.25 + 3.75 + 5.0)
    # Without cache prices, cached and written tokens cost what input costs.
    assert Price(input=1, output=2).usd(usage) == pytest.approx(4 + 1)


def test_gpt_4o_from_the_table_and_a_dated_snapshot_falls_back_to_its_name() -> None:
    book = PriceBook()
    usage = Usage(input_uncached=1000, cache_read=1000, output=1000, model="openai/gpt-4o")
    assert book.usd(usage) == pytest.approx((1000 * 2.5 + 1000 * 1.25 + 1000 * 10) / 1e6)
    dated = Usage(input_uncached=1000, model="openai/gpt-4o-2024-08-06")
    assert book.quote(dated.model).origin == "table" and book.usd(dated) == pytest.approx(0.0025)


def test_an_unknown_model_says_so_instead_of_costing_0() -> None:
    book = PriceBook()
    usage = [
        Usage(input_uncached=100, output=10, model="openai/gpt-4o"),
        Usage(input_uncached=100, output=10, role="tool-side", model="openai/some-new-model"),
        Usage(role="tool-side", model="tesseract/ocr"),  # no tokens: free whatever its price
    ]
    cost = book.sample_cost(usage)
    assert cost.unpriced == ("openai/some-new-model",)
    assert cost.total is None
    assert cost.priced == pytest.approx((100 * 2.5 + 10 * 10) / 1e6)
    assert set(cost.by_role) == {"agent", "tool-side"} and cost.by_role["tool-side"] == 0.0


def test_cached_answers_are_priced_apart_as_savings() -> None:
    spent = [Usage(input_uncached=1000, output=100, model="openai/gpt-4o")]
    cached = [Usage(input_uncached=1_000_000, role="tool-side", model="openai/gpt-4o-mini")]
    cost = sample_cost(spent, cached)
    assert cost.cached_usd == pytest.approx(0.15)
    assert cost.total == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)


def test_config_price_overrides_and_free_routes() -> None:
    priced = ModelConfig.from_mapping(
        {
            "name": "openai/gpt-4o",
            "base_url": "https://gateway.example/v1",
            "price": {"input": 1, "output": 2},
        }
    )
    local = ModelConfig.from_mapping({"name": "openai/qwen", "base_url": "http://127.0.0.1:8000/v1"})
    free = ModelConfig.from_mapping({"name": "openai/mine", "base_url": "https://x.example/v1", "price": 0})
    book = PriceBook.for_models([priced, local, free, ModelConfig.from_mapping("baseline/keyword")])
    assert book.quote("openai/gpt-4o").origin == "config"
    assert book.usd(Usage(input_uncached=1_000_000, output=1_000_000, model="openai/gpt-4o")) == 3.0
    assert book.quote("openai/qwen").origin == "local server" and book.quote("openai/qwen").price is not None
    assert book.quote("openai/mine").price == Price(input=0, output=0)
    assert book.quote("baseline/keyword").origin == "offline policy"
    # A model on a remote endpoint without a row or a price stays unknown.
    remote = ModelConfig.from_mapping({"name": "openai/qwen", "base_url": "https://vllm.example/v1"})
    assert not PriceBook.for_models([remote]).quote("openai/qwen").known
    with pytest.raises(ConfigError, match="price must be a table"):
        ModelConfig.from_mapping({"name": "openai/x", "price": 3})
    with pytest.raises(ConfigError, match="price"):
        ModelConfig.from_mapping({"name": "openai/x", "price": {"input": -1, "output": 1}})


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        (None, False),
    ],
)
def test_loopback_urls(url: str | None, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_a_price_does_not_change_the_config_hash_and_max_cost_neither() -> None:
    base = {"name": "r", "model": {"name": "openai/gpt-4o"}, "arms": [{"name": "fs"}]}
    plain = parse_config(base)
    priced = parse_config(
        {**base, "max_cost": 10, "model": {"name": "openai/gpt-4o", "price": {"input": 1, "output": 1}}}
    )
    assert plain.config_hash() == priced.config_hash()
    assert priced.model.to_dict()["price"]["input"] == 1  # still in the manifest's config
    with pytest.raises(ConfigError, match="max_cost"):
        parse_config({**base, "max_cost": 0})


def test_a_table_row_without_source_or_date_is_refused() -> None:
    with pytest.raises(PriceError, match="source and date"):
        parse_table('[models."openai/x"]\ninput = 1\noutput = 2\n')
    with pytest.raises(PriceError, match="output"):
        parse_table('[models."openai/x"]\ninput = 1\nsource = "https://x"\ndate = "2026-01-01"\n')


def test_a_record_carries_its_cost_and_older_records_read_without_one() -> None:
    cost = SampleCost(by_role={"agent": 0.5, "extractor": 0.25}, cached_usd=0.1)
    record = RunRecord(
        run_id="r",
        arm="fs",
        qid="q",
        doc_id="d",
        epoch=0,
        model="openai/gpt-4o",
        status="ok",
        score=1.0,
        answer_protocol="submit_tool",
        raw_answer="a",
        extracted_answer="a",
        gold="a",
        answer_format="Str",
        cost=cost,
    )
    data = record.to_dict()
    assert data["cost"]["total"] == 0.75
    assert RunRecord.from_dict(data).cost == cost
    del data["cost"]
    assert RunRecord.from_dict(data).cost is None
    assert SampleCost(unpriced=("openai/x",)).total is None
    assert math.isclose(SampleCost(by_role={"agent": 1.0}, unpriced=("x",)).priced, 1.0)
