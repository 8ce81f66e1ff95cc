"""A run's configuration: one TOML file, validated, with errors that name the key.

Everything that can change a result is in the config (and hashed into the run's manifest): the
dataset and its filters, the model, the answer protocol, the limits, the output budget, the
prompts, the MCP servers and the arms. Run controls that only change how fast or how much is run,
or when a run counts as failed (``concurrency``, ``epochs``, ``max_error_share``, ``max_cost``, a
run's ``limit`` and ``shard``) are left out of the hash, so re-running with more epochs or another
concurrency resumes the same run; so are the models' ``price`` and ``cache``
(:data:`docab.log.identity.UNHASHED_MODEL_OPTIONS`). So is the transport of the model tables (``base_url``,
``api_key_env``, ``headers``, ``region``, ``project``, ``concurrency``, ``rpm``, ``tpm``, ``http_backend``, timeouts
and retries: :data:`docab.models.config.TRANSPORT_OPTIONS`): where an endpoint lives and how it is
reached do not change what a record means, so a run resumed at another URL is the same run.

Shipped configs live in ``harness/docab/configs/`` and are documented there.

Relative paths (``dataset.path``, ``dataset.corpus``) resolve against the folder of the config
file, so a config works from any current folder; the shipped configs are templates for the
project root, and their paths resolve against the current folder. The hash covers the paths as
written, so shards run from different checkouts still merge.

Overrides (``docab run --set limits.max_turns=10``, ``--model``, ``--base-url``) change the TOML
before it is validated (:func:`apply_overrides`): dotted keys into its tables (``arms.1.prompt``
indexes an array), values read as TOML (``10``, ``true``, ``["a", "b"]``; anything that is not
TOML is a string). The schema checks the result as it checks the file, so an override that
changes the config changes its hash.

    name = "my-run"
    [dataset]  source = "suite" | "mmlongbench", path, corpus, filters
    [model]    name = "openai/gpt-4o" | "anthropic/..." | "baseline/keyword", base_url, ...
               (docab.models.config.ModelConfig; see harness/docab/models/README.md)
    [answer]   protocol = "submit_tool" | "extraction", extractor (a [model] table),
               prose_fallback_after = 2 (submit_tool: reminders before prose is extracted; 0 never)
    [limits]   max_turns, max_tokens, max_wall_s, max_output_tokens (docab.limits.SampleLimits)
    [output_budget]  limit, unit = "chars" | "tokens", image_cost
    [prompt]   system, user  (templates; see DEFAULT_SYSTEM)
    [mcp_servers.NAME]  command, args, env, scope, tools, timeouts
    [[arms]]   name, tools = ["fs"], mcp_servers = [...], prompt
    [breaker]  enabled = true, failures = 5, window_s = 300: stop the run (exit 3) when that many
               model calls in a row, from 2 or more samples, fail with a connection error within
               window_s seconds (docab.runner.breaker); a run control, not hashed

The schema is validated once, when the file is read, into typed sections (the model too); it holds
values only and imports no agent or runner code: the runner turns sections into the agent's objects
(an ``OutputBudget``, ``MCPServerSpec`` per server, the system prompt with the answer protocol's
instructions).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from docab.errors import ConfigError
from docab.limits import SampleLimits
from docab.log.identity import identity_hash, identity_of
from docab.log.records import AnswerProtocol
from docab.models.config import ModelConfig
from docab.protocol import PROSE_FALLBACK_AFTER

__all__ = [
    "CONFIG_DIR",
    "ArmConfig",
    "BudgetConfig",
    "ConfigError",
    "DatasetConfig",
    "MCPServerConfig",
    "ModelConfig",
    "Override",
    "PromptConfig",
    "RunConfig",
    "SampleLimits",
    "apply_overrides",
    "identity_hash",
    "identity_of",
    "load_config",
    "parse_config",
    "parse_override",
    "resolve_config_path",
    "with_overrides",
]

CONFIG_DIR = Path(__file__).parent / "configs"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")

DEFAULT_SYSTEM = """\
You answer questions about one document, using the tools you are given.
The document is in the folder `document/` of your workspace: `document/document.md` holds its text, \
with one `## Page N` heading per page, and `document/pages/` holds an image of each page.
Find the evidence with the tools before you answer.
{answer_instructions}
{arm_prompt}"""

DEFAULT_USER = "Question: {question}"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetConfig(_Section):
    source: Literal["suite", "mmlongbench"] = "suite"
    path: str | None = None  # mmlongbench: a folder in the benchmark's GitHub layout (data/samples.json)
    corpus: str | None = None  # the converted corpus (docab convert --out); default under results/corpus/
    doc_ids: list[str] | None = None
    doc_types: list[str] | None = None
    evidence_sources: list[str] | None = None
    answerable_only: bool = False
    max_evidence_page: int | None = Field(default=None, ge=1)  # 120: the official 120-page view
    sample: int | None = Field(default=None, ge=1)  # a seeded random subset of this many questions
    sample_seed: int = 0

    @model_validator(mode="after")
    def _path_for_mmlongbench(self) -> DatasetConfig:
        if self.source == "mmlongbench" and not self.path:
            raise ValueError(
                "source 'mmlongbench' needs path = the benchmark data folder (with samples.json)"
            )
        return self


class AnswerConfig(_Section):
    protocol: AnswerProtocol = "submit_tool"
    extractor: ModelConfig | None = None  # a [model] table, for "extraction"; default: the run's model
    # Under submit_tool: after this many reminders to call submit_answer, a model that still answers
    # in prose has its last prose answer taken through the benchmark's answer extraction (the
    # record's answer_path "prose-fallback"), so a weak model is scored, not zeroed. 0: never.
    prose_fallback_after: int = Field(default=PROSE_FALLBACK_AFTER, ge=0, le=100)


class BudgetConfig(_Section):
    limit: int = Field(default=32_000, ge=1)
    unit: Literal["chars", "tokens"] = "chars"
    image_cost: int | None = Field(default=None, ge=0)


class PromptConfig(_Section):
    system: str = DEFAULT_SYSTEM
    user: str = DEFAULT_USER

    @field_validator("user")
    @classmethod
    def _has_question(cls, value: str) -> str:
        if "{question}" not in value:
            raise ValueError("the user prompt template must contain {question}")
        return value


class MCPServerConfig(_Section):
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    scope: Literal["sample", "worker"] = "sample"
    tools: list[str] | None = None
    startup_timeout_s: float = Field(default=60.0, gt=0)
    call_timeout_s: float = Field(default=120.0, gt=0)
    max_restarts: int = Field(default=3, ge=0)


def _filesystem_tools() -> list[Literal["fs"]]:
    return ["fs"]


class ArmConfig(_Section):
    name: str
    tools: list[Literal["fs"]] = Field(default_factory=_filesystem_tools)
    mcp_servers: list[str] = Field(default_factory=list)
    prompt: str = ""  # the arm's minimal prompt addition, stated here so it can be read

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(f"{value!r}: use letters, digits and . _ + - only")
        return value


class BreakerConfig(_Section):
    """``[breaker]``: stop the run when the endpoint is gone (docab.runner.breaker). A run control,
    not part of the run's identity: it decides when a run stops, not what a record means."""

    enabled: bool = True
    failures: int = Field(default=5, ge=2)  # consecutive model calls failing with a connection error
    window_s: float = Field(default=300.0, gt=0)  # ... all within this many seconds


class RunConfig(_Section):
    name: str
    description: str = ""
    seed: int = 0
    epochs: int = Field(default=1, ge=1)
    concurrency: int = Field(default=4, ge=1, le=1024)
    # The share of samples that may end in error or timeout (a model call, an MCP server or the
    # harness failed; wrong answers and limits hit do not count) before `docab run` exits 1.
    max_error_share: float = Field(default=0.0, ge=0.0, le=1.0)
    # USD the run may spend in all (every session of it): `docab run` starts no sample that its
    # estimate says would exceed it (docab.runner.spend). A run control: not part of the hash.
    max_cost: float | None = Field(default=None, gt=0)
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    model: ModelConfig  # a table or a bare name; see harness/docab/models/README.md for every option
    answer: AnswerConfig = Field(default_factory=AnswerConfig)
    limits: SampleLimits = Field(default_factory=SampleLimits)
    output_budget: BudgetConfig = Field(default_factory=BudgetConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)
    arms: list[ArmConfig] = Field(min_length=1)
    # The folder relative paths resolve against: the config file's (load_config), or None for
    # the current folder (a shipped config, or a config built in code). Not part of the hash.
    _base_dir: Path | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(f"{value!r}: the run name names a folder; use letters, digits and . _ + - only")
        return value

    @property
    def base_dir(self) -> Path | None:
        return self._base_dir

    def relative_to(self, base_dir: Path | None) -> RunConfig:
        """This config with relative paths resolving against ``base_dir`` (None: the current folder)."""
        copy = self.model_copy()
        copy._base_dir = base_dir
        return copy

    def resolve_path(self, value: str) -> Path:
        """A path from the config, absolute: see :func:`resolve_config_path`."""
        return resolve_config_path(value, self._base_dir)

    @model_validator(mode="after")
    def _arms_are_consistent(self) -> RunConfig:
        names = [arm.name for arm in self.arms]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"arm names must be unique: {', '.join(duplicates)} appear twice")
        for index, arm in enumerate(self.arms):
            for server in arm.mcp_servers:
                if server not in self.mcp_servers:
                    defined = ", ".join(sorted(self.mcp_servers)) or "none"
                    raise ValueError(
                        f"arms[{index}] ({arm.name}) uses MCP server {server!r}, which is not defined "
                        f"under [mcp_servers] (defined: {defined})"
                    )
            if not arm.tools and not arm.mcp_servers:
                raise ValueError(f"arms[{index}] ({arm.name}) has no tools and no MCP servers")
        return self

    @property
    def extractor_model(self) -> ModelConfig:
        """The model that extracts answers under the extraction protocol: its own, or the run's.

        An extractor of the run model's route (provider and platform) without an endpoint of its
        own follows the run's (:meth:`ModelConfig.following`): it takes ``[model]``'s ``base_url``,
        ``api_key_env`` and platform settings, so pointing ``[model]`` at a local server sends every
        call there, not the extractor's to the provider's public API."""
        extractor = self.answer.extractor
        if extractor is None:
            return self.model
        return extractor.following(self.model)

    @property
    def is_baseline(self) -> bool:
        return self.model.provider == "baseline"

    def identity(self) -> dict[str, Any]:
        """What a record's meaning depends on: the config without run controls, its model tables
        without transport (see :func:`identity_of`). The model tables hold every option with its
        default, so equivalent spellings hash alike."""
        return identity_of(self.model_dump(mode="json"))

    def config_hash(self) -> str:
        return identity_hash(self.model_dump(mode="json"))

    def arm(self, name: str) -> ArmConfig:
        return next(a for a in self.arms if a.name == name)

    def system_prompt(self, arm: ArmConfig, answer_instructions: str) -> str:
        """The system prompt of ``arm``: the same skeleton for every arm, with the answer protocol's
        instructions (``docab.agent.answer.protocol_instructions``) and the arm's own addition."""
        text = self.prompt.system.replace("{answer_instructions}", answer_instructions)
        return text.replace("{arm_prompt}", arm.prompt.strip()).strip() + "\n"

    def user_prompt(self, question: str) -> str:
        return self.prompt.user.replace("{question}", question)


def resolve_config_path(value: str, base_dir: Path | None) -> Path:
    """A path from a config as an absolute path: ``~`` expanded, a relative one joined to
    ``base_dir`` (the config's folder; None: the current folder), ``..`` collapsed so that
    messages show where it is."""
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return Path(os.path.normpath(path))


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _explain(error: ErrorDetails) -> str:
    where = _where(tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-"))))
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown key (check its spelling; see harness/docab/configs/ for examples)"
    if kind == "missing":
        return f"{where}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}"


def parse_config(data: dict[str, Any], *, source: str = "config") -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = "\n  ".join(_explain(e) for e in exc.errors())
        raise ConfigError(f"{source} is not a valid run config:\n  {problems}") from None


def load_config(path: str | Path, overrides: Sequence[Override | str] = ()) -> RunConfig:
    """Read and validate a TOML config, with ``overrides`` applied first (:func:`apply_overrides`).

    A bare name (``demo``) means a shipped config. Relative paths in the file resolve against its
    folder; a shipped config's against the current folder (they are templates for the project root).
    """
    path = Path(path)
    if not path.exists() and path.suffix == "" and (CONFIG_DIR / f"{path.name}.toml").exists():
        path = CONFIG_DIR / f"{path.name}.toml"
    if path.is_dir():
        found = ", ".join(sorted(p.name for p in path.glob("*.toml"))[:5]) or "none"
        raise ConfigError(f"{str(path)!r} is a folder, not a config file (TOML files in it: {found})")
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.toml")))
        raise ConfigError(
            f"config file {str(path)!r} not found (looked for {path.absolute()}; shipped configs: {shipped})"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    changes = [parse_override(o) if isinstance(o, str) else o for o in overrides]
    source = str(path)
    if changes:
        data = apply_overrides(data, changes)
        source += " with " + " ".join(f"--set {c}" for c in changes)
    shipped_config = path.resolve().parent == CONFIG_DIR.resolve()
    return parse_config(data, source=source).relative_to(None if shipped_config else path.resolve().parent)


# -- overrides -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    """``--set KEY=VALUE``: the dotted key as its parts (an int indexes an array) and the value."""

    key: str  # as given, for messages and the manifest
    parts: tuple[str | int, ...]
    value: Any

    def __str__(self) -> str:
        shown = self.value if isinstance(self.value, str) else json.dumps(self.value)
        return f"{self.key}={shown}"


def parse_override(text: str) -> Override:
    """``KEY=VALUE``: KEY is a dotted TOML key (``limits.max_turns``, ``arms.1.prompt``,
    ``mcp_servers."md.vision".args``); VALUE is read as a TOML value, or kept as a string when it
    is not one (``openai/gpt-4o``). Raises ConfigError."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: give KEY=VALUE, e.g. limits.max_turns=10")
    try:
        nested = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        raise ConfigError(
            f"--set {text!r}: {key!r} is not a dotted key (a.b.c; quote parts with dots)"
        ) from None
    parts: list[str | int] = []
    node: Any = nested
    while isinstance(node, dict):
        name = next(iter(node))
        parts.append(int(name) if name.isdigit() else name)
        node = node[name]
    return Override(key=key, parts=tuple(parts), value=toml_value(raw.strip()))


def toml_value(raw: str) -> Any:
    """``raw`` as a TOML value (number, boolean, string in quotes, array, inline table), else the
    text itself: ``--set model.name=openai/gpt-4o`` needs no quotes."""
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw


# Tables that may be written as a bare string: a model's name stands for a table holding only it.
_SHORTHAND_TABLES = {("model",), ("answer", "extractor")}


def apply_overrides(data: dict[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """A copy of a config's TOML data with each override set, in order; missing tables are created.
    Raises ConfigError naming the override that cannot be applied."""
    result: dict[str, Any] = json.loads(json.dumps(data))  # a deep copy of plain TOML data
    for override in overrides:
        _set(result, override)
    return result


def _set(data: dict[str, Any], override: Override) -> None:
    node: Any = data
    walked: list[str | int] = []
    for index, part in enumerate(override.parts):
        last = index == len(override.parts) - 1
        here = ".".join(str(p) for p in walked) or "the config"
        if isinstance(node, list):
            if not isinstance(part, int) or not 0 <= part < len(node):
                raise ConfigError(
                    f"--set {override.key}: {here} is an array of {len(node)}; "
                    f"index it with 0 to {len(node) - 1} (e.g. {here}.0)"
                )
        elif isinstance(node, dict):
            part = str(part)
            if not last and isinstance(node.get(part), str) and (*walked, part) in _SHORTHAND_TABLES:
                node[part] = {"name": node[part]}
            if last and part == "name" and "model" in node and "name" not in node:
                node.pop("model")  # the alias of name in a model table: the override replaces it
        else:
            raise ConfigError(f"--set {override.key}: {here} is a value, not a table")
        if last:
            node[part] = override.value
            return
        if isinstance(node, dict) and part not in node:
            node[part] = {}
        node = node[part]
        walked.append(part)


def with_overrides(config: RunConfig, overrides: Sequence[Override | str]) -> RunConfig:
    """``config`` with ``overrides`` applied and validated again (for configs built in code);
    relative paths still resolve where they did."""
    changes = [parse_override(o) if isinstance(o, str) else o for o in overrides]
    if not changes:
        return config
    data = apply_overrides(config.model_dump(mode="json", exclude_unset=True), changes)
    source = "the config with " + " ".join(f"--set {c}" for c in changes)
    return parse_config(data, source=source).relative_to(config.base_dir)
