"""The response cache: keys of everything that determines a reply (never the key), hits that cost
nothing with their original usage kept apart, epochs of a sampled run apart, a store shared safely
by processes, and ``docab cache info`` / ``prune``. Runs against the loopback OpenAI stub."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from docab.cli.main import main
from docab.log.store import read_records
from docab.models.cache import ResponseCache, response_key
from docab.report.render import to_markdown
from docab.report.summary import build_report, load_run
from docab.usage import Usage
from tests.harness.corpus import write_benchmark_folder
from tests.support.cache_writer import write_entries
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "max_tokens": 10}


def key(**changes: object) -> str:
    base: dict[str, object] = {
        "route": "openai",
        "url": "https://api.example/v1",
        "model": "openai/m",
        "api": "chat",
        "request": REQUEST,
        "temperature": 0.0,
        "epoch": 0,
    }
    base.update(changes)
    return response_key(**base)  # type: ignore[arg-type]


def test_the_key_covers_what_determines_a_reply_and_epochs_only_when_sampling() -> None:
    assert key() == key()
    assert key(request={**REQUEST, "messages": [{"role": "user", "content": "hello"}]}) != key()
    assert key(request={**REQUEST, "tools": [{"name": "grep"}]}) != key()
    assert key(request={**REQUEST, "max_tokens": 11}) != key()
    assert key(request={**REQUEST, "seed": 1}) != key()
    for part in ("route", "url", "model", "api"):
        assert key(**{part: "other"}) != key(), part
    # temperature 0: one reply whatever the epoch; sampled (or the provider's default): one per epoch
    assert key(epoch=1) == key(epoch=0)
    assert key(temperature=0.7, epoch=1) != key(temperature=0.7, epoch=0)
    assert key(temperature=None, epoch=1) != key(temperature=None, epoch=0)


def test_a_hit_carries_no_tokens_and_keeps_the_original_apart() -> None:
    original = Usage(input_uncached=100, cache_read=20, output=7, model="openai/m")
    hit = Usage.cache_hit(original)
    assert hit.total == 0 and hit.model == "openai/m"
    assert hit.cached_original() == original
    assert original.cached_original() is None
    assert Usage.from_dict(hit.to_dict()).cached_original() == original


def test_processes_share_one_store_safely(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=write_entries, args=(str(tmp_path), n * 100)) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = ResponseCache(tmp_path)
    assert cache.info().entries == 300
    assert all(cache.get(f"k{i}") == {"i": i} for i in range(300))
    assert cache.get("absent") is None
    cache.close()


def test_prune_removes_old_and_excess_replies(tmp_path: Path) -> None:
    now = [1000.0]
    cache = ResponseCache(tmp_path, clock=lambda: now[0])
    cache.put("old", {"x": "o" * 1000})
    now[0] += 10 * 86400
    cache.put("new", {"x": "n" * 1000})
    result = cache.prune(older_than_s=5 * 86400)
    assert result.expired == 1 and cache.get("old") is None and cache.get("new") is not None
    for i in range(50):
        cache.put(f"big{i}", {"x": str(i) * 20_000})
    result = cache.prune(max_bytes=200_000)
    assert result.culled > 0 and result.info.bytes <= 200_000 + 100_000 and result.info.size_limit == 200_000
    cache.close()


def answering(protocol: str, request: Request) -> Reply:
    body = request.json()
    if not any(m["role"] == "tool" for m in body["messages"]):
        return openai_reply(
            None,
            tool_calls=[("c1", "read_file", json.dumps({"path": "document/document.md"}))],
            prompt_tokens=1000,
            completion_tokens=100,
        )
    return openai_reply(
        None,
        tool_calls=[("c2", "submit_answer", json.dumps({"status": "answered", "answer": "1980"}))],
        prompt_tokens=2000,
        completion_tokens=50,
    )


CONFIG = """\
name = "cached"
epochs = {epochs}
[dataset]
source = "mmlongbench"
path = "bench/data"
corpus = "bench/corpus"
[model]
name = "openai/stub-model"
base_url = "{base_url}"
max_retries = 0
{temperature}
price = {{ input = 10, output = 20, source = "a test price" }}
[[arms]]
name = "fs"
[[arms]]
name = "fs-again"
"""


def chat_calls(stub: LLMStub) -> int:
    return len(stub.requests_for("openai"))


@pytest.mark.parametrize(("temperature", "epochs"), [("temperature = 0", 1), ("temperature = 0.7", 2)])
def test_a_second_run_is_served_from_the_cache_and_reports_what_it_saved(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    temperature: str,
    epochs: int,
) -> None:
    monkeypatch.setenv("DOCAB_CACHE_DIR", str(tmp_path / "cache"))
    write_benchmark_folder(tmp_path / "bench", documents=2)
    with LLMStub(answering) as stub:
        config = tmp_path / "cached.toml"
        config.write_text(
            CONFIG.format(base_url=stub.openai_base_url, temperature=temperature, epochs=epochs)
        )
        base = ["run", str(config), "--quiet", "--limit", "2", "--no-preflight", "--cache"]
        assert main([*base, "--out", str(tmp_path / "first")]) == 0
        first_calls = chat_calls(stub)
        # Two questions, two calls per sample, per epoch: the two arms send the same requests (their
        # tools and prompts are the same here), so the second arm of each is served from the cache;
        # a sampled run (temperature 0.7) calls again for its second epoch.
        samples = 2 * 2 * epochs
        assert first_calls == 2 * 2 * epochs
        assert main([*base, "--out", str(tmp_path / "second")]) == 0
        assert chat_calls(stub) == first_calls  # every reply came from the cache
        assert f"response cache: {tmp_path / 'cache'}" in capsys.readouterr().out

    second = list(read_records(tmp_path / "second" / "records.jsonl"))
    assert len(second) == samples and {r.status for r in second} == {"ok"}
    for record in second:
        assert record.tokens() == 0 and record.cost is not None and record.cost.total == 0
        assert len(record.cached_model_usage) == 2 == len(record.usage)
        assert sum(u.total for u in record.cached_model_usage) == 1100 + 2050
        assert record.cost.cached_usd == pytest.approx((3000 * 10 + 150 * 20) / 1e6)
    summary = build_report(load_run(tmp_path / "second")).summary
    arm = summary.arms[0]
    assert arm.cost is not None and arm.cost.total == 0
    assert arm.cost.uncached_total == pytest.approx(samples / 2 * (3000 * 10 + 150 * 20) / 1e6)
    assert "saved by cache" in to_markdown(summary)

    assert main(["cache", "info"]) == 0
    entries = first_calls
    assert f"{entries} replies" in capsys.readouterr().out
    assert main(["cache", "prune", "--older-than", "1"]) == 0
    assert "removed 0 expired or old" in capsys.readouterr().out


def test_without_cache_nothing_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCAB_CACHE_DIR", str(tmp_path / "cache"))
    write_benchmark_folder(tmp_path / "bench", documents=2)
    with LLMStub(answering) as stub:
        config = tmp_path / "cached.toml"
        config.write_text(
            CONFIG.format(base_url=stub.openai_base_url, temperature="temperature = 0", epochs=1)
        )
        assert (
            main(
                [
                    "run",
                    str(config),
                    "--quiet",
                    "--limit",
                    "1",
                    "--no-preflight",
                    "--out",
                    str(tmp_path / "r"),
                ]
            )
            == 0
        )
    assert not (tmp_path / "cache").exists()
    assert all(not r.cached_model_usage for r in read_records(tmp_path / "r" / "records.jsonl"))


def test_the_token_limit_counts_a_cached_reply_at_its_original_size() -> None:
    from docab.agent.loop import AgentTrace

    original = Usage(input_uncached=900, output=100, model="openai/m")
    trace = AgentTrace(usage=[Usage.cache_hit(original), Usage(input_uncached=10, model="openai/m")])
    assert trace.agent_tokens() == 1010  # a replay hits limits.max_tokens where the original run did
