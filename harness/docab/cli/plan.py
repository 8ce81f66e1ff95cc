"""``docab plan RUN_DIR``: a pilot run projected to the full run (``docab.report.plan``).

The face only: it loads the pilot and the planned question set (its config's dataset), calls the
pure projection and prints it; with writing on, the pilot's report.md and summary.json gain it.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docab.cli.errors import CommandError

if TYPE_CHECKING:
    from docab.config import RunConfig
    from docab.report.plan import Target
    from docab.report.schema import Plan
    from docab.report.summary import RunData

FORMATS = ("table", "markdown", "json")

HELP = """\
Project a pilot run to the full run before paying for it: what it will cost in US dollars (with a
95 % interval), how long it will take at the configured concurrency (and rate limits), and the
smallest accuracy difference between the arms it can detect (the minimum detectable effect, MDE,
80 % power, two-sided alpha 0.05, documents as clusters); with --mde, the reverse: how many
questions detect a difference of that many points, and what they cost.

The pilot is any run folder, best a few dozen questions spread over the documents
(docab run CONFIG --limit 40): each arm's cost per sample, over the questions that arm ran, is
scaled to the planned questions and the arms summed, with an interval that covers the questions
not yet run (a question a stopped pilot ran in only some arms still counts as to run in the
others); its time per question too,
times what its sessions spent beyond the samples themselves (set-up, waits). The MDE uses the
pilot's discordance (how often the arms' scores differ) once it spans 10 documents and its ICC
(how much a document's questions agree) once 10 documents hold two or more of its questions; the
defaults (30 %, 0.1) otherwise. The table says which.

The planned run is the full question set of the pilot's config's dataset (its filters applied),
or --questions N (and --documents D). Raising --limit on the same folder extends the pilot: the
"still to run" row is what that costs. The figures are written into RUN_DIR/report.md and
summary.json ("plan") unless --no-write.

examples:
  docab run configs/mmlb-openai.toml --limit 40      # the pilot
  docab plan results/mmlb-openai                      # the full 1,082 questions
  docab plan results/mmlb-openai --mde 3              # questions for a 3-point MDE
  docab plan results/mmlb-openai --questions 500 --concurrency 16 --format markdown
  docab run configs/mmlb-openai.toml --cache --max-cost 40   # the run, capped at the high end
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="project a pilot run to the full run: cost (USD), wall time, detectable effect",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the pilot: results/<run-id>/")
    parser.add_argument(
        "--questions", type=int, metavar="N", help="plan N questions (default: the config's dataset)"
    )
    parser.add_argument(
        "--documents",
        type=int,
        metavar="D",
        help="over D documents (default: the dataset's, or N / 8 without it)",
    )
    parser.add_argument(
        "--mde",
        type=float,
        metavar="POINTS",
        help="also the questions needed to detect an accuracy difference of POINTS points (3 = 3 %%)",
    )
    parser.add_argument(
        "--concurrency", type=int, metavar="K", help="samples in flight (default: the config's)"
    )
    parser.add_argument("--rpm", type=float, metavar="R", help="the endpoint's requests per minute")
    parser.add_argument("--tpm", type=float, metavar="T", help="the endpoint's tokens per minute")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE.toml",
        help="read the dataset (and concurrency) from this config instead of the run's manifest",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="what to print (default: table)")
    parser.add_argument(
        "--no-write", action="store_true", help="print only; leave report.md and summary.json alone"
    )
    parser.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from docab.cli.report import write_report_files
    from docab.report.render import plan_markdown, print_plan
    from docab.report.summary import ReportError, build_report, load_run

    for name in ("questions", "documents", "concurrency"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CommandError(f"--{name} must be at least 1, got {value}")
    for name in ("rpm", "tpm"):
        value = getattr(args, name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise CommandError(f"--{name} must be a positive number, got {value}")
    if args.mde is not None and not (0 < args.mde < 100):
        raise CommandError(f"--mde is in points between 0 and 100 (3 means 3 %), got {args.mde}")
    try:
        run = load_run(args.run_dir)
        report = build_report(run)
    except ReportError as exc:
        raise CommandError(str(exc)) from None
    config = _config(args, run)
    plan = make_plan(
        run,
        [a.arm for a in report.summary.arms],
        report.outcomes,
        config,
        questions=args.questions,
        documents=args.documents,
        concurrency=args.concurrency,
        rpm=args.rpm,
        tpm=args.tpm,
        mde_points=args.mde,
    )
    if args.format == "json":
        print(plan.model_dump_json(indent=2))
    elif args.format == "markdown":
        print(plan_markdown(plan, run.manifest.run_id))
    else:
        print_plan(plan, run.manifest.run_id)
    if not args.no_write and args.run_dir.is_dir():
        with_plan = build_report(run, plan=plan)
        written = write_report_files(with_plan, args.run_dir, plots=False)
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def _config(args: argparse.Namespace, run: RunData) -> RunConfig | None:
    """The pilot's config: --config, else the manifest's (None when neither reads)."""
    from docab.config import load_config, parse_config
    from docab.errors import ConfigError

    if args.config is not None:
        try:
            return load_config(args.config)
        except ConfigError as exc:
            raise CommandError(str(exc)) from None
    if not run.manifest.config:
        return None
    try:
        config = parse_config(dict(run.manifest.config), source=f"{args.run_dir}/manifest.json")
    except ConfigError:
        return None
    # Relative dataset paths resolve against the config file's folder: the file the run was
    # started with, when its sessions name one that still exists.
    for session in reversed(run.manifest.sessions):
        for word in session.argv:
            if word.endswith(".toml") and Path(word).is_file():
                return config.relative_to(Path(word).resolve().parent)
    return config


def planned_documents(config: RunConfig) -> list[str]:
    """The document id of every question of the config's dataset, its filters applied (no corpus
    needed). Raises DocabError (DatasetError) when it cannot be read."""
    from docab.errors import DatasetError
    from docab.runner.dataset import question_filter
    from docab_benchmark.mmlongbench.errors import DataError
    from docab_benchmark.mmlongbench.questions import load_questions

    dataset = config.dataset
    try:
        if dataset.source == "suite":
            from docab_benchmark.suite import ensure_suite

            source: str | Path = ensure_suite()
        elif str(dataset.path).startswith("hf:"):
            source = str(dataset.path)
        else:
            source = config.resolve_path(dataset.path or "")
            if not source.exists():
                raise DatasetError(f"dataset.path {dataset.path!r} not found (looked for {source})")
        found = load_questions(source, criteria=question_filter(dataset))
    except DataError as exc:
        raise DatasetError(str(exc)) from None
    except OSError as exc:
        raise DatasetError(f"could not read the dataset: {exc.strerror or exc}") from None
    return [q.doc_id for q in found.questions]


def make_plan(
    run: RunData,
    arms: Sequence[str],
    outcomes: Any,
    config: RunConfig | None,
    *,
    questions: int | None = None,
    documents: int | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    mde_points: float | None = None,
) -> Plan:
    """The plan for ``run``: the target from the flags and the config's dataset."""
    from docab.errors import DocabError
    from docab.report.plan import pilot_from_run, project

    doc_ids: list[str] | None = None
    problem = "the run has no readable config in its manifest (give --config FILE)"
    if config is not None:
        try:
            doc_ids = planned_documents(config)
        except DocabError as exc:
            problem = str(exc)
    if questions is None and doc_ids is None:
        raise CommandError(
            f"cannot read the full question set: {problem}; give --questions N (and --documents D), "
            "or --config FILE"
        )
    target = _target(config, doc_ids, questions, documents, concurrency, rpm, tpm)
    pilot = pilot_from_run(run.manifest, run.records, outcomes, arms)
    return project(pilot, target, target_mde=None if mde_points is None else mde_points / 100)


def _target(
    config: RunConfig | None,
    doc_ids: list[str] | None,
    questions: int | None,
    documents: int | None,
    concurrency: int | None,
    rpm: float | None,
    tpm: float | None,
) -> Target:
    from docab.report.plan import Target, document_sizes

    sizes: tuple[int, ...] = ()
    if doc_ids is not None:
        sizes = document_sizes(doc_ids)
    n = questions if questions is not None else len(doc_ids or ())
    if documents is None:
        documents = min(len(sizes), n) if sizes else max(1, math.ceil(n / 8))
    if questions is not None and (doc_ids is None or questions != len(doc_ids)):
        sizes = ()  # another size than the dataset's: documents of equal size
    model = config.model if config is not None else None
    epochs = config.epochs if config is not None else 1
    return Target(
        questions=n,
        documents=max(1, min(documents, n)),
        document_sizes=sizes,
        epochs=epochs,
        concurrency=concurrency or (config.concurrency if config is not None else 4),
        endpoint_concurrency=getattr(model, "concurrency", None),
        rpm=rpm or getattr(model, "rpm", None),
        tpm=tpm or getattr(model, "tpm", None),
        extends_pilot=True,
    )
