"""``docab run CONFIG``: run an A/B configuration; re-running the same command resumes it."""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the run's modules load only when a command runs, so --help stays fast
    from docab.config import RunConfig
    from docab.runner.launch import RunRequest
    from docab.runner.schedule import Shard

HELP = """\
Run every question of a config's dataset through every arm (the same model, different tools),
writing results/<run-id>/: manifest.json, records.jsonl (one line per arm, question and epoch,
flushed as each sample finishes) and transcripts/.

Re-running the same command resumes: recorded samples are skipped, nothing is duplicated, and a
killed run loses only the samples that were in flight. --retry-errors also runs again the
samples that ended in an error or timeout (their new records are appended; the newest stands).
Resuming refuses data that changed (exit 2): a question already asked whose gold answer, answer
format or evidence differs now, or a converted document already read that differs (converted
again), since the samples would be scored against two sets of data; run into a new folder (--out),
or pass --accept-data-change (the samples already recorded keep their scores). Questions not asked
yet (a larger --limit) are no change. A note says when package versions or docab's commit differ
from the run's first session.

Before any sample, each model endpoint gets one cheap request (its model list) and each MCP
server is started once, so an unreachable server or a refused key stops the run at once; until
these checks pass the run folder is not created or changed, so the corrected command just runs.
Relative paths in a config file resolve against its folder.

One process writes a run folder at a time (RUN_DIR/run.lock, held for the whole run): a second
one is refused with a line naming the holder, or waits with --wait. A run that was killed leaves
its lock behind; the next start takes the folder over and removes the killed run's temporary
workspaces. The endpoint's URL, key variable, headers, timeouts and retries are not part of the
run's identity: a run resumed at another URL is the same run, and each session records its URLs.

Overrides change the config as if its TOML said so, and are recorded in the manifest; an override
that changes the config changes its hash, so give such a run its own name (--set name=... or --out).

exit status: 0 the run finished; 1 more samples ended in an error or timeout than allowed
(--max-error-share; by default none), with a one-line account of the causes; 2 the run could not
start (config, dataset, endpoint, MCP server, run folder, another process writing it); 3 the spend
cap (--max-cost) stopped it before its last sample (the samples done are kept; a higher cap
resumes it), or the endpoint went down during the run: the circuit breaker ([breaker]: 5 model
calls in a row from 2 or more samples failing with a connection error within 300 s, by default)
stopped it, finished samples are kept, the ones in flight are not recorded, and the command that
resumes it is printed.

examples:
  docab run mmlongbench-openai --limit 20                      # 20 questions spread over the documents
  docab run mmlongbench-openai --base-url http://localhost:8000/v1 --model openai/qwen2.5-vl \\
      --set answer.extractor.name=openai/qwen2.5-vl --set name=qwen    # the extractor follows base_url
  docab run my.toml --set limits.max_turns=10 --set 'dataset.doc_types=["Brochure"]'
  docab run my.toml --retry-errors        # after fixing what failed: only the errored samples run
  docab run my.toml --max-cost 25         # stop before the run would spend more than 25 USD in all
  docab run my.toml --cache               # replay replies already made for the same requests, store new ones
  docab run my.toml --shard 1/4           # on machine 1 of 4; then: docab merge results/my.shard-*
  docab run my.toml --shard auto          # in a Slurm array task or a Kubernetes Indexed Job pod
  docab run demo                          # a shipped config, by name
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an A/B configuration (resumable)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config", help="a TOML run config, or the name of a shipped one (harness/docab/configs/)"
    )
    add_run_options(parser)
    overrides = parser.add_argument_group("overrides (validated like the file; recorded in the manifest)")
    overrides.add_argument(
        "--model", metavar="PROVIDER/MODEL", help="the agent's model, e.g. openai/gpt-4o-mini (model.name)"
    )
    overrides.add_argument(
        "--base-url",
        metavar="URL",
        help="the agent's endpoint, e.g. http://localhost:8000/v1 (model.base_url); an extractor of the "
        "same provider without its own base_url follows it",
    )
    overrides.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config key: dotted (limits.max_turns=10, arms.1.prompt=...), the value read as TOML "
        '(numbers, true, ["a", "b"]; other text is a string); repeatable',
    )
    parser.add_argument(
        "--retry-errors",
        action="store_true",
        help="also run again the samples whose newest record is an error or timeout (appended)",
    )
    parser.add_argument(
        "--accept-data-change",
        action="store_true",
        help="resume even though questions already asked (gold answer, answer format, evidence) or "
        "documents already read differ now: the samples already recorded keep their scores, the rest "
        "run on the new data, and the session records what changed",
    )
    parser.add_argument(
        "--max-error-share",
        type=error_share,
        metavar="SHARE",
        help="exit 1 when more than this share of samples ends in an error or timeout: 0.05 or 5%% "
        "(default: the config's max_error_share, 0: any)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="serve model replies from docab's response cache and store new ones (model.cache=true): "
        "a reply is keyed by the route, model, messages, tools, parameters and, unless temperature is "
        "0, the epoch; a hit costs nothing and its original cost is recorded apart. Folder: "
        "$DOCAB_CACHE_DIR or the platform's cache folder; see docab cache info",
    )
    parser.add_argument(
        "--max-cost",
        type=usd_amount,
        metavar="USD",
        help="the most the whole run may spend, in US dollars: no sample starts that the estimate "
        "(the mean cost of the samples done so far) says would pass it; samples in flight finish, and "
        "the run exits 3 with the command that resumes it under a higher cap (default: the config's "
        "max_cost, none). Needs a known price for every model (docab.pricing, or [model] price)",
    )
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the one request per model endpoint made before the first sample",
    )
    parser.set_defaults(func=main)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="run N questions spread over the documents: round-robin over the documents in a seeded "
        "order (the config's seed), so a small N still covers several documents; a larger N keeps "
        "the questions of a smaller one",
    )
    parser.add_argument(
        "--first", type=int, metavar="N", help="run the first N questions in dataset order (not spread)"
    )
    parser.add_argument(
        "--concurrency", type=int, metavar="K", help="samples in flight (default: the config's)"
    )
    parser.add_argument(
        "--epochs", type=int, metavar="E", help="runs per question and arm (default: the config's)"
    )
    parser.add_argument(
        "--shard",
        metavar="i/N|auto",
        help="run shard i of N, numbered from 1 (split by question); auto: read it from the scheduler "
        "(DOCAB_SHARD=i/N, a Slurm array task, or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with "
        "DOCAB_SHARD_COUNT); merge the shards with docab merge",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="results folder (default: results)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="RUN_DIR", help="the run folder (default: RESULTS/<run name>)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument(
        "--wait",
        action="store_true",
        help="when another process is writing the run folder, wait for it to finish (default: refuse)",
    )


def shard_option(text: str, env: Mapping[str, str] | None = None) -> Shard:
    """``--shard i/N`` (1 <= i <= N) or ``--shard auto`` (the scheduler's variables in ``env``,
    default ``os.environ``) as a Shard; raises CommandError worded for the flag."""
    from docab.cli.errors import CommandError
    from docab.runner.schedule import ShardError, parse_shard, shard_from_environment

    try:
        if text.strip().lower() == "auto":
            return shard_from_environment(os.environ if env is None else env)
        return parse_shard(text)
    except ShardError as exc:
        raise CommandError(f"--shard {text}: {exc}") from None


def error_share(text: str) -> float:
    """``0.05`` or ``5%`` as a share between 0 and 1 (an argparse type)."""
    raw = text.strip()
    try:
        value = float(raw.removesuffix("%")) / (100 if raw.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 0.05 or 5%, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (0 % to 100 %), got {text!r}")
    return value


def usd_amount(text: str) -> float:
    """``25``, ``25.50`` or ``$25`` as a positive amount of US dollars (an argparse type)."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an amount of US dollars such as 25, got {text!r}"
        ) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive amount of US dollars, got {text!r}")
    return value


def resume_command(argv: Sequence[str], cap: float) -> str:
    """The command line ``argv`` (after ``docab``) with ``--max-cost`` set to ``cap``."""
    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--max-cost":
            skip = True
        elif not word.startswith("--max-cost="):
            words.append(word)
    return shlex.join(["docab", *words, "--max-cost", f"{math.ceil(cap * 100) / 100:.2f}"])


def overrides_from(args: argparse.Namespace) -> list[str]:
    """``--model``, ``--base-url``, ``--cache`` and every ``--set``, as KEY=VALUE in the order they apply."""
    changes = [f"model.name={args.model}"] if getattr(args, "model", None) else []
    if getattr(args, "base_url", None):
        changes.append(f"model.base_url={args.base_url}")
    if getattr(args, "cache", False):
        changes.append("model.cache=true")
    return changes + list(getattr(args, "overrides", []))


def check_counts(args: argparse.Namespace, *names: str) -> None:
    """Each of the flags ``names`` (``limit``, ``concurrency``, ``epochs``) at least 1 when given."""
    from docab.cli.errors import CommandError

    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CommandError(f"--{name} must be at least 1, got {value}")


def request_from(
    args: argparse.Namespace, config: RunConfig, env: Mapping[str, str] | None = None
) -> RunRequest:
    """The run the flags ask for, checked and worded for the flags before the library sees them;
    ``--shard auto`` reads ``env`` (default ``os.environ``)."""
    from docab.cli.errors import CommandError
    from docab.runner.launch import RunRequest

    shard = shard_option(args.shard, env) if args.shard else None
    if shard is not None and shard.origin:  # even with --quiet: a scheduler's log must say which shard ran
        print(f"docab run: {shard.describe()}", file=sys.stderr)
    check_counts(args, "limit", "first", "concurrency", "epochs")
    if args.limit is not None and args.first is not None:
        raise CommandError(
            "--limit and --first exclude each other: --limit spreads over documents, --first does not"
        )
    return RunRequest(
        config=config,
        results_dir=args.results,
        run_dir=args.out,
        limit=args.limit,
        first=args.first,
        concurrency=args.concurrency,
        epochs=args.epochs,
        shard=shard.pair if shard else None,
        quiet=args.quiet,
        retry_errors=getattr(args, "retry_errors", False),
        preflight=not getattr(args, "no_preflight", False),
        overrides=tuple(overrides_from(args)),
        wait=getattr(args, "wait", False),
        max_cost=getattr(args, "max_cost", None),
        accept_data_change=getattr(args, "accept_data_change", False),
    )


def main(args: argparse.Namespace) -> int:
    from docab.cli.summary import launch_and_report
    from docab.config import load_config

    config = load_config(args.config, overrides=overrides_from(args))
    share = args.max_error_share if args.max_error_share is not None else config.max_error_share
    argv = list(getattr(args, "argv", sys.argv[1:]))
    return launch_and_report(
        request_from(args, config), max_error_share=share, resume=lambda cap: resume_command(argv, cap)
    )
