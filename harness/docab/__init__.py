"""docab: do document tools make LLM agents better at long documents? An A/B harness.

The library's entry points; the command line (``docab run``, ``docab report``...) is a thin face
over them. Names load on first use, so ``import docab`` costs nothing until one is used.

Running
    ``run(config, **options) -> RunOutcome``
        Run (or resume) every arm of a config on its dataset, in an event loop of its own; for
        scripts. ``config`` is a :class:`RunConfig`, a TOML file or the name of a shipped config
        (``"demo"``). Options: ``results_dir``, ``run_dir``, ``limit``, ``concurrency``, ``epochs``,
        ``shard=(i, N)``, ``quiet``, and ``dataset``, ``model``, ``scorer``, ``progress``, ``say`` to
        replace what the config would build. Refuses to run inside a running event loop.
    ``await run_async(config, **options) -> RunOutcome``
        The same in the running event loop: a notebook, or async code.
    :class:`RunOutcome`
        ``run_dir`` (the run folder: ``manifest.json``, ``records.jsonl``, ``transcripts/``),
        ``records`` (:class:`docab.log.records.RunRecord`), ``ran`` and ``skipped`` (resumed) counts.

Configuring
    ``load_config(path_or_name) -> RunConfig``
        Read and validate a TOML run config (``harness/docab/configs/`` documents every key).
    :class:`RunConfig`
        The validated config (pydantic): build one in code with ``RunConfig.model_validate({...})``.

Errors (all :class:`DocabError`, whose message is one line fit to show a user)
    :class:`ConfigError` a config that cannot be used, naming the file and the key;
    :class:`RunError` a run that cannot start or go on; :class:`DatasetError` (a ``RunError``) the
    questions or their converted documents cannot be loaded.

Example, in a notebook::

    import docab

    outcome = await docab.run_async("demo", results_dir="results", quiet=True)
    print(outcome.run_dir, len(outcome.records))

Reports read the run folder: ``docab.report.summary.load_run`` and ``build_report``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docab.config import RunConfig, load_config
    from docab.errors import ConfigError, DatasetError, DocabError, RunError
    from docab.runner.launch import RunOutcome, run, run_async

__all__ = [
    "ConfigError",
    "DatasetError",
    "DocabError",
    "RunConfig",
    "RunError",
    "RunOutcome",
    "load_config",
    "run",
    "run_async",
]

_HOMES = {
    "run": "docab.runner.launch",
    "run_async": "docab.runner.launch",
    "RunOutcome": "docab.runner.launch",
    "load_config": "docab.config",
    "RunConfig": "docab.config",
    "DocabError": "docab.errors",
    "ConfigError": "docab.errors",
    "RunError": "docab.errors",
    "DatasetError": "docab.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'docab' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
