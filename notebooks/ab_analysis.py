# %% [markdown]
# # A/B analysis of a docab run
#
# Loads any run folder written by `docab run` or `docab demo` (`results/<run-id>/` with
# `manifest.json` and `records.jsonl`) into pandas, reproduces the headline table and plots of
# `docab report`, and shows how to slice further. Set `DOCAB_RUN` (or edit `RUN_DIR`) to choose
# the run; several shards can be listed, separated by `:`.
#
# This notebook is kept as two files with the same cells: `notebooks/ab_analysis.py` (percent
# format; run it as a script with `uv run python notebooks/ab_analysis.py`) and
# `notebooks/ab_analysis.ipynb` (regenerate it with `uv run python -m tests.harness.test_notebook --write`).

# %%
import os
from pathlib import Path

import pandas as pd

from docab.report.frames import questions_frame, records_frame
from docab.report.plots import write_plots
from docab.report.render import to_markdown
from docab.report.summary import build_report, load_run

RUN_DIRS = [Path(p) for p in os.environ.get("DOCAB_RUN", "results/demo").split(":")]
pd.set_option("display.width", 140)


def in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def show(obj):
    """Rich display inside Jupyter, plain text in a terminal."""
    if in_notebook():
        from IPython.display import display

        display(obj)
    else:
        print(obj)


def show_markdown(text: str) -> None:
    if in_notebook():
        from IPython.display import Markdown, display

        display(Markdown(text))
    else:
        print(text)


def show_image(path: Path) -> None:
    if in_notebook():
        from IPython.display import Image, display

        display(Image(filename=str(path)))
    else:
        print(f"plot: {path}")


# %% [markdown]
# ## Load the run
# `load_run` reads and merges the folders (warnings name torn lines and duplicates);
# `build_report` computes everything `docab report` prints.

# %%
run = load_run(*RUN_DIRS)
for warning in run.warnings:
    print("warning:", warning)
report = build_report(run)
summary = report.summary
print(f"run {summary.run_id}: arms {', '.join(run.arms)}; {len(run.records)} records")

# %% [markdown]
# ## The headline table
# The same report as `docab report` (`report.md`): per arm, then each arm against the reference
# arm with paired intervals, then the breakdowns.

# %%
show_markdown(to_markdown(summary))

# %% [markdown]
# ## The records, flattened
# One row per record (arm, question, epoch), with tokens per role, tool calls per tool and
# evidence recall as columns. `docab export RUN_DIR` writes the same table as parquet.

# %%
records = records_frame(run.records)
show(
    records.groupby("arm")[["score", "tokens", "wall_time_s", "turns", "tool_call_count"]].agg(
        ["mean", "median"]
    )
)

# %% [markdown]
# ## One row per question and arm
# Epochs averaged: the unit the report pairs. The headline accuracy is its mean.

# %%
questions = questions_frame(report.outcomes)
headline = questions.groupby("arm", sort=False)["score"].mean()
for arm in summary.arms:
    assert abs(headline[arm.arm] - (arm.accuracy.value or 0.0)) < 1e-9  # the table above, reproduced
show(headline.rename("accuracy"))

# %% [markdown]
# ## Paired view
# Questions side by side: where does each arm win or lose against the reference arm?

# %%
arms = list(report.outcomes)
reference = summary.reference_arm
paired = questions.pivot_table(index=["doc_id", "qid"], columns="arm", values="score")
for arm in arms:
    if arm != reference:
        paired[f"{arm} - {reference}"] = paired[arm] - paired[reference]
        show(paired[f"{arm} - {reference}"].value_counts().sort_index().rename(f"{arm} - {reference}"))
show(paired.head(10))

# %% [markdown]
# ## Slicing further
# Any column slices the same way. A question can have several evidence sources, and an unanswerable
# question with one evidence page is also single-page: `explode` counts it under each, as the report
# does.

# %%
by_pages = questions.explode("evidence_pages_groups")
show(by_pages.pivot_table(index="evidence_pages_groups", columns="arm", values="score", aggfunc="mean"))
by_source = questions.explode("evidence_sources")
show(
    by_source.pivot_table(index="evidence_sources", columns="arm", values="score", aggfunc=["mean", "count"])
)
tool_columns = [c for c in questions.columns if c.startswith("calls_")]
show(questions.groupby("arm")[tool_columns].mean().T.rename_axis("mean calls per question"))

# %% [markdown]
# ## Plots
# Written into the run folder, as `docab report` does: accuracy with intervals, accuracy against
# tokens, token and latency distributions, accuracy per breakdown.

# %%
paths = write_plots(report, RUN_DIRS[0] / "plots")
for path in paths:
    show_image(path)
