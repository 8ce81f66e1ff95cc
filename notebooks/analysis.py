# %% [markdown]
# # A/B run analysis
#
# Loads a run folder written by `docab run` (`results/<run-id>/` with `manifest.json` and
# `records.jsonl`), shows the headline tables and plots of `docab report`, and slices the
# per-question outcomes with pandas. Set `DOCAB_RUN` (or edit `RUN_DIR`) to choose the run.
#
# This file is the notebook in percent format: run it as a script (`uv run python
# notebooks/analysis.py`) or open `notebooks/analysis.ipynb`, which holds the same cells.

# %%
import dataclasses
import os
from pathlib import Path

import pandas as pd

from harness.report import build_report, load_run
from harness.report_plots import write_plots
from harness.report_render import to_markdown

RUN_DIR = Path(os.environ.get("DOCAB_RUN", "results/demo"))
RESAMPLES = int(os.environ.get("DOCAB_RESAMPLES", "10000"))


def show(obj):
    """Rich display inside Jupyter, plain text in a terminal."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(obj)
            return
    except ImportError:
        pass
    print(obj)


# %% [markdown]
# ## The report
# The same summary `docab report` writes to `summary.json`, rendered as markdown.

# %%
run = load_run(RUN_DIR)
report = build_report(run, resamples=RESAMPLES)
summary = report.summary
try:
    from IPython.display import Markdown

    show(Markdown(to_markdown(summary)))
except ImportError:
    show(to_markdown(summary))

# %% [markdown]
# ## Per-question outcomes
# One row per arm and question, epochs averaged (scores, tokens, time, evidence recall).

# %%
questions = pd.DataFrame(
    [
        dataclasses.asdict(outcome)
        for by_question in report.outcomes.values()
        for outcome in by_question.values()
    ]
)
show(questions.groupby("arm")[["score", "tokens", "wall_time_s", "tool_calls", "evidence_recall"]].mean())

# %% [markdown]
# ## Paired view
# Questions side by side: where does arm B win or lose against the reference arm?

# %%
arms = list(report.outcomes)
if len(arms) >= 2:
    paired = questions.pivot_table(index=["doc_id", "qid"], columns="arm", values="score")
    paired["B - A"] = paired[arms[1]] - paired[arms[0]]
    show(paired["B - A"].value_counts().sort_index())
    show(paired.sort_values("B - A").head(10))

# %% [markdown]
# ## Slicing further
# Accuracy by document type and arm; any column of the table can be used the same way.

# %%
show(questions.pivot_table(index="doc_type", columns="arm", values="score", aggfunc="mean"))

# %% [markdown]
# ## Plots
# Written into the run folder, as `docab report --plots` does.

# %%
paths = write_plots(report, RUN_DIR / "plots")
try:
    from IPython.display import Image

    for path in paths:
        show(Image(filename=str(path)))
except ImportError:
    show("\n".join(str(p) for p in paths))
