"""The result cache: keys, hits, TTL with an injected clock, corrupt entries, atomic private files."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from tests.support.llm_stub import LLMStub, openai_reply
from tests.vision_bridge.conftest import png_bytes, settings_for, with_service
from vision_bridge.cache import BackendIdentity, ResultCache, cache_key
from vision_bridge.usage import TokenUsage

IDENTITY = BackendIdentity("openai", "m1", "https://api.example.com/v1", 4096)


def key(**changes) -> str:
    parts = {"tool": "ocr_image", "prompt": "p", "options": {"format": "plain"}, "images": ["sha256:aa"]}
    parts["identity"] = changes.pop("identity", IDENTITY)
    parts.update(changes)
    return cache_key(**parts)


def test_key_is_stable_and_covers_everything_that_shapes_the_answer() -> None:
    base = key()
    assert base == key() and len(base) == 64
    variants = [
        key(prompt="q"),
        key(tool="analyze_image"),
        key(options={"format": "json"}),
        key(images=["sha256:bb"]),
        key(images=["sha256:aa", "sha256:aa"]),
        key(identity=BackendIdentity("openai", "m2", IDENTITY.endpoint, 4096)),  # model
        key(identity=BackendIdentity("anthropic", "m1", IDENTITY.endpoint, 4096)),  # API format
        key(identity=BackendIdentity("openai", "m1", "http://localhost:8000/v1", 4096)),  # endpoint
        key(identity=BackendIdentity("openai", "m1", IDENTITY.endpoint, 100)),  # answer length
    ]
    assert len({base, *variants}) == len(variants) + 1


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_ttl_expiry_at_its_edge(tmp_path: Path) -> None:
    clock = Clock()
    cache = ResultCache(tmp_path / "c", ttl_s=60, clock=clock)
    cache.put("k", text="answer", usage=TokenUsage(input_tokens=5))
    clock.now += 59.999
    hit = cache.get("k")
    assert hit is not None and hit.text == "answer" and hit.usage.input_tokens == 5
    clock.now += 0.001
    assert cache.get("k") is None
    assert not (tmp_path / "c" / "k.json").exists()  # expired entries are removed


def test_directory_is_private_files_are_private_and_writes_leave_no_temp_files(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "deep" / "cache", ttl_s=60)
    cache.put("k", text="x", usage=TokenUsage())
    directory = tmp_path / "deep" / "cache"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "k.json").stat().st_mode) == 0o600
    assert [p.name for p in directory.iterdir()] == ["k.json"]


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        json.dumps({"format": 1, "key": "other", "created": 1e6, "text": "x", "usage": {}}).encode(),
        json.dumps({"format": 99, "key": "k", "created": 1e6, "text": "x", "usage": {}}).encode(),
        json.dumps({"format": 1, "key": "k", "created": "yesterday", "text": "x", "usage": {}}).encode(),
        json.dumps({"format": 1, "key": "k", "created": 1e6, "text": None, "usage": {}}).encode(),
    ],
)
def test_corrupt_entries_are_misses(tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture) -> None:
    cache = ResultCache(tmp_path, ttl_s=60, clock=Clock())
    (tmp_path / "k.json").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="vision_bridge"):
        assert cache.get("k") is None
    assert "corrupt" in caplog.text
    assert not (tmp_path / "k.json").exists()


def test_a_cache_that_cannot_be_written_is_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "blocked").write_text("a file where the folder should be")
    cache = ResultCache(tmp_path / "blocked" / "cache", ttl_s=60)
    with caplog.at_level(logging.WARNING, logger="vision_bridge"):
        cache.put("k", text="x", usage=TokenUsage())
    assert "could not write the cache" in caplog.text
    assert cache.get("k") is None


# -- through the service ---------------------------------------------------------------------------


async def analyze_twice(service, path: str):
    return [await service.analyze(path, "describe"), await service.analyze(path, "describe")]


def test_second_call_is_a_hit_with_zero_cost(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    llm_stub.push("openai", openai_reply("described", prompt_tokens=900, completion_tokens=40))
    first, second = with_service(settings_for(llm_stub, tmp_path), lambda s: analyze_twice(s, str(picture)))
    assert first.text == second.text == "described"
    assert len(llm_stub.requests_for("openai")) == 1
    meta = second.usage.to_meta()
    assert (meta["from_cache"], meta["calls"], meta["input_tokens"], meta["output_tokens"]) == (True, 0, 0, 0)
    assert first.usage.to_meta()["input_tokens"] == 900


def test_a_hit_still_reports_what_the_answer_originally_cost(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push("openai", openai_reply("described", prompt_tokens=900, completion_tokens=40))
    first, second = with_service(settings_for(llm_stub, tmp_path), lambda s: analyze_twice(s, str(picture)))
    original = second.usage.to_meta()["original_usage"]
    assert (original["input_tokens"], original["output_tokens"]) == (900, 40)
    assert "original_usage" not in first.usage.to_meta()  # a miss spent its tokens itself


def test_the_key_is_the_content_not_the_path(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    (tmp_path / "copy.png").write_bytes(picture.read_bytes())
    (tmp_path / "other.png").write_bytes(png_bytes(color="blue"))

    async def scenario(service):
        for name in ("picture.png", "copy.png", "other.png"):
            await service.analyze(str(tmp_path / name), "describe")

    with_service(settings_for(llm_stub, tmp_path), scenario)
    assert len(llm_stub.requests_for("openai")) == 2  # the copy hit, the other image missed


def test_switching_model_or_format_misses(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    async def once(service):
        return await service.analyze(str(picture), "describe")

    with_service(settings_for(llm_stub, tmp_path, VISION_MODEL="model-a"), once)
    with_service(settings_for(llm_stub, tmp_path, VISION_MODEL="model-b"), once)
    with_service(settings_for(llm_stub, tmp_path, VISION_MODEL="model-a"), once)  # hit
    assert len(llm_stub.requests_for("openai")) == 2
    with_service(settings_for(llm_stub, tmp_path, "anthropic", VISION_MODEL="model-a"), once)
    assert len(llm_stub.requests_for("anthropic")) == 1


def test_ttl_through_the_service_with_an_injected_clock(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    clock = Clock()
    settings = settings_for(llm_stub, tmp_path, VISION_CACHE_TTL="100")

    async def scenario(service):
        await service.analyze(str(picture))
        clock.now += 99
        hit = await service.analyze(str(picture))
        clock.now += 1
        miss = await service.analyze(str(picture))
        return hit, miss

    hit, miss = with_service(settings, scenario, cache_clock=clock)
    assert hit.usage.from_cache and not miss.usage.from_cache
    assert len(llm_stub.requests_for("openai")) == 2


def test_corrupt_entry_through_the_service_is_replaced(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    settings = settings_for(llm_stub, tmp_path)
    with_service(settings, lambda s: s.analyze(str(picture)))
    (entry,) = (tmp_path / "cache").glob("*.json")
    entry.write_text('{"format": 1, "key": "truncat')
    again = with_service(settings, lambda s: s.analyze(str(picture)))
    assert not again.is_error and not again.usage.from_cache
    _header, payload = entry.read_text().split(
        "\n", 1
    )  # docab_mcpguard.diskcache: a header line, then the entry
    assert json.loads(payload)["text"] == "stub answer"
    assert len(llm_stub.requests_for("openai")) == 2


def test_ttl_zero_disables_the_cache_entirely(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    settings = settings_for(llm_stub, tmp_path, VISION_CACHE_TTL="0")
    with_service(settings, lambda s: analyze_twice(s, str(picture)))
    assert len(llm_stub.requests_for("openai")) == 2
    assert not (tmp_path / "cache").exists()


def test_errors_are_not_cached(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    llm_stub.push("openai", openai_reply(""))
    first, second = with_service(settings_for(llm_stub, tmp_path), lambda s: analyze_twice(s, str(picture)))
    assert first.is_error and not second.is_error
    assert len(os.listdir(tmp_path / "cache")) == 1  # only the success


def test_an_entry_whose_answer_is_corrupt_is_removed_so_it_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from docab_mcpguard.diskcache import DiskCache

    clock = Clock()
    DiskCache(tmp_path, 60, clock=clock, suffix=".json").put("k", b'{"format": 1, "text": null}')
    cache = ResultCache(tmp_path, ttl_s=60, clock=clock)
    with caplog.at_level(logging.WARNING, logger="vision_bridge"):
        assert cache.get("k") is None
        assert cache.get("k") is None
    assert caplog.text.count("corrupt") == 1
    assert not (tmp_path / "k.json").exists()


def test_the_cache_folder_has_a_configurable_cap_and_expired_answers_are_pruned(
    llm_stub: LLMStub, tmp_path: Path
) -> None:
    # Issue 27 item 6: the folder grew without bound, expired entries stayed until read again.
    settings = settings_for(llm_stub, tmp_path, VISION_CACHE_MAX_MB="1")
    assert settings.cache_max_bytes == 1024 * 1024
    assert settings_for(llm_stub, tmp_path).cache_max_bytes == 64 * 1024 * 1024  # the default
    with pytest.raises(Exception, match="VISION_CACHE_MAX_MB='0' must be at least 1"):
        settings_for(llm_stub, tmp_path, VISION_CACHE_MAX_MB="0")

    clock = Clock()
    folder = tmp_path / "capped"
    cache = ResultCache(folder, ttl_s=3600, clock=clock, max_bytes=20_000)
    for number in range(100):
        clock.now += 1
        cache.put(f"k{number:03}", text="x" * 900, usage=TokenUsage(input_tokens=number))
        assert sum(p.stat().st_size for p in folder.iterdir()) <= 20_000
    newest = cache.get("k099")
    assert newest is not None and newest.usage.input_tokens == 99 and cache.get("k000") is None

    # Expired answers go on a later process's first write, whether read again or not.
    clock.now += 7200
    later = ResultCache(folder, ttl_s=3600, clock=clock, max_bytes=20_000)
    later.put("new", text="y", usage=TokenUsage())
    assert [p.name for p in folder.iterdir()] == ["new.json"]


@pytest.mark.parametrize("ttl_s", [0, 60])
def test_an_answer_that_is_not_valid_unicode_is_answered_and_not_cached(tmp_path: Path, ttl_s: float) -> None:
    # A provider's answer holding a lone surrogate made put() raise UnicodeEncodeError, even with
    # the cache off: the paid answer was lost as "unexpected internal failure".
    cache = ResultCache(tmp_path / "c", ttl_s=ttl_s, clock=Clock())
    cache.put("k", text="lone \ud800 surrogate", usage=TokenUsage(input_tokens=5))
    assert cache.get("k") is None
