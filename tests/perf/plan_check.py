"""Check ``docab plan`` against runs of the full size: a pilot, its projection, then the full run
from scratch, and whether the full run's actual cost and wall time fall inside the projected
intervals.

    uv run python -m tests.perf.plan_check            # the built-in suite (offline demo and stub)
    uv run python -m tests.perf.plan_check --dev      # and the dev subset (../shared/data), if present

Cases: the offline demo (``docab demo``'s config: baseline/keyword, both arms, md-vision over stdio,
cost 0), and the loopback OpenAI stub at a fixed price (1,000 USD per million tokens) whose prompt
tokens and reply delay vary by question, on the built-in suite and on the MMLongBench-Doc dev
subset (its 14 PDFs converted first; skipped, saying so, when ``../shared/data`` is absent).
Prints one row per case. Wall time is a measurement of this machine under its load at the time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from docab.cli.main import main
from docab.log.manifest import load_manifest
from docab.log.store import read_records
from docab.report.schema import Plan
from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "mmlongbench-dev"

STUB_CONFIG = """\
name = "{name}"
concurrency = 4
[dataset]
{dataset}
[model]
name = "openai/stub-model"
base_url = "{base_url}"
max_retries = 0
price = {{ input = 1000, output = 1000, source = "a test price" }}
[[arms]]
name = "fs"
[[arms]]
name = "fs-again"
"""


def _digest(body: dict[str, object]) -> bytes:
    text = json.dumps(body["messages"])
    question = text.split("Question: ", 1)[-1][:120]
    return hashlib.sha256(question.encode()).digest()


def answering(protocol: str, request: Request) -> Reply:
    body = request.json()
    digest = _digest(body)
    tokens = 50 + digest[0] * 4
    delay = 0.02 + digest[1] / 255 * 0.2
    if not any(m["role"] == "tool" for m in body["messages"]):
        call = ("c1", "read_file", json.dumps({"path": "document/document.md", "limit": 50}))
    else:
        call = ("c2", "submit_answer", json.dumps({"status": "answered", "answer": "1980"}))
    return openai_reply(None, tool_calls=[call], prompt_tokens=tokens, delay=delay)


def _quiet(argv: list[str]) -> int:
    """A docab command in a child process (its MCP servers need real file descriptors)."""
    done = subprocess.run([sys.executable, "-m", "docab", *argv], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode


def elapsed(run_dir: Path) -> float:
    total = 0.0
    for session in load_manifest(run_dir / "manifest.json").sessions:
        if session.started_at and session.finished_at:
            begun = datetime.fromisoformat(session.started_at.replace("Z", "+00:00"))
            ended = datetime.fromisoformat(session.finished_at.replace("Z", "+00:00"))
            total += (ended - begun).total_seconds()
    return total


def spent(run_dir: Path) -> float:
    return sum((r.cost.total or 0.0) for r in read_records(run_dir / "records.jsonl") if r.cost)


def check(name: str, run: list[str], full_run: list[str], plan_dir: Path, config: str | None) -> str:
    assert _quiet(run) in (0, 1), f"{name}: the pilot failed"
    argv = ["plan", str(plan_dir), "--format", "json", "--no-write"]
    if config:
        argv += ["--config", config]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0, f"{name}: docab plan failed"
    plan = Plan.model_validate_json(out.getvalue())
    assert _quiet(full_run) in (0, 1), f"{name}: the full run failed"
    full_dir = Path(full_run[full_run.index("--results") + 1]) / plan_dir.name
    cost, wall = plan.full.cost, plan.full.wall_s
    actual_cost, actual_time = spent(full_dir), elapsed(full_dir)

    def inside(value: float, low: float | None, high: float | None) -> str:
        if low is None or high is None:
            return "no interval"
        return "inside" if low <= value <= high else "OUTSIDE"

    cost_text = "unpriced"
    if cost is not None:
        cost_text = (
            f"${cost.value:.4f} [{cost.low or 0:.4f}, {cost.high or 0:.4f}] actual ${actual_cost:.4f} "
            f"{inside(actual_cost, cost.low, cost.high)}"
        )
    time_text = (
        f"{wall.value or 0:.1f} s [{wall.low or 0:.1f}, {wall.high or 0:.1f}] actual {actual_time:.1f} s "
        f"{inside(actual_time, wall.low, wall.high)}"
    )
    return (
        f"{name}: pilot {plan.pilot_questions} q / {plan.pilot_documents} docs -> "
        f"{plan.full.questions} q / {plan.full.documents} docs | cost {cost_text} | time {time_text} | "
        f"MDE {(plan.full.mde or 0) * 100:.1f} pts ({plan.discordance_source} discordance)"
    )


def stub_case(name: str, dataset: str, work: Path, limit: int, base_url: str) -> str:
    config = work / f"{name}.toml"
    config.write_text(STUB_CONFIG.format(name=name, dataset=dataset, base_url=base_url))
    pilot = ["run", str(config), "--results", str(work / "pilot"), "--quiet", "--limit", str(limit)]
    full = ["run", str(config), "--results", str(work / "full"), "--quiet"]
    return check(name, pilot, full, work / "pilot" / name, str(config))


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dev", action="store_true", help="also the dev subset in ../shared/data")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        demo_pilot = ["demo", "--results", str(work / "demo-pilot"), "--quiet", "--limit", "12"]
        demo_full = ["demo", "--results", str(work / "demo-full"), "--quiet"]
        rows.append(check("demo (offline)", demo_pilot, demo_full, work / "demo-pilot" / "demo", None))
        print(rows[-1], flush=True)
        with LLMStub(answering) as stub:
            rows.append(stub_case("suite-stub", 'source = "suite"', work, 12, stub.openai_base_url))
            print(rows[-1], flush=True)
            if args.dev:
                if not (SHARED / "samples.json").is_file() and not (SHARED / "data").is_dir():
                    print(f"dev subset: skipped ({SHARED} is absent)")
                else:
                    from docab_benchmark.mmlongbench.corpus import convert_corpus

                    corpus = work / "dev-corpus"
                    convert_corpus(SHARED / "documents", corpus, jobs=2)
                    dataset = f'source = "mmlongbench"\npath = "{SHARED}"\ncorpus = "{corpus}"'
                    rows.append(stub_case("dev-stub", dataset, work, 40, stub.openai_base_url))
                    print(rows[-1], flush=True)
    return 0 if all("OUTSIDE" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main_())
