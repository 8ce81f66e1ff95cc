"""The benchmark as an Inspect AI task: run docab's questions with any Inspect model provider.

::

    inspect eval docab/mmlongbench_doc -T arm=fs --model openai/gpt-4o
    inspect eval docab/mmlongbench_doc -T arm=fs+md-vision --model openai/gpt-4o
    docab report logs/          # the two logs: per-arm metrics and the paired statistics

The task reads a docab run config (``-T config=``: a shipped name or a TOML path; default ``demo``,
the built-in suite) and one of its arms (``-T arm=``; default the first). Everything but the model
comes from the config, as in ``docab run``: the dataset (``docab.runner.dataset.load_dataset``:
the built-in suite or MMLongBench-Doc with its converted corpus), the system and user prompts, the
answer protocol, the limits, the output budget and the MCP servers:

- **dataset**: one Inspect ``Sample`` per question (``id`` = qid, ``target`` = the gold answer; the
  question's facts in ``metadata``, :class:`docab.interchange.inspect_log.QuestionInfo`);
- **solver** (:func:`docab_agent`): each sample gets a fresh workspace holding only ``document/``
  (``docab.runner.workspace.copy_document``); the arm's filesystem tools are docab's own
  (``list_files``, ``read_file``, ``grep``); its MCP servers (md-vision) run over stdio through
  Inspect's MCP client (``mcp_server_stdio``), one process per sample. Every tool result, filesystem
  or MCP, passes through the config's one output budget (``docab.agent.budget.OutputBudget``)
  before the model sees it, and Inspect's own tool-output cut is set above it, so both arms are cut
  alike. The model runs turn by turn up to ``max_turns``; under ``submit_tool`` it answers with
  ``submit_answer`` (reminded when it stops without), under ``extraction`` with plain text;
- **scorer** (:func:`docab_score`, score name ``docab``): the benchmark's official rules
  (``docab_benchmark.mmlongbench.scoring.score_answer``) on the submitted answer, or on the answer
  the benchmark's extraction prompt reduces the reply to, run with Inspect's ``grader`` model role
  (``--model-role grader=openai/gpt-4o``; default: the evaluated model).

The solver and scorer leave a :class:`docab.interchange.inspect_log.SampleTrail` in the sample's
store and score metadata (turns, usage, tool calls, pages read, the answer trail), so
``docab report`` and ``docab compare`` read the logs as runs with every docab metric.

Differences from ``docab run``: each arm is its own eval (Inspect does not interleave arms per
question); MCP servers start per sample whatever their ``scope``; md-vision's ``_meta`` does not
pass through Inspect's MCP client, so evidence pages of md-vision reads are found from the text
shown (as for any tool). Inspect's own limits apply on top: ``token_limit`` and ``time_limit`` are
set from ``max_tokens`` and ``max_wall_s``.

Registered with Inspect through the ``inspect_ai`` entry point of the ``docab`` distribution, so
``docab/mmlongbench_doc`` resolves once docab is installed; ``inspect eval
harness/docab/interchange/inspect_task.py@mmlongbench_doc`` works from a checkout too.
"""

from __future__ import annotations

import base64
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentAudio,
    ContentDocument,
    ContentImage,
    ContentText,
    ContentVideo,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParams, mcp_server_stdio
from inspect_ai.tool import ToolResult as InspectToolResult

from docab.agent.answer import REMINDER, SUBMIT_TOOL, parse_submission, protocol_instructions
from docab.agent.budget import OutputBudget
from docab.agent.evidence import PageMap, ReadTracker, page_spans
from docab.agent.toolbox.filesystem import filesystem_tools
from docab.config import ArmConfig, RunConfig, load_config
from docab.interchange.inspect_log import (
    SCORE_NAME,
    QuestionInfo,
    SampleTrail,
    TrailToolCall,
    decode_data_url,
)
from docab.log.records import AnswerProtocol
from docab.messages import Block, Image, Text, ToolCall, ToolResult
from docab.runner.context import output_budget, server_spec
from docab.runner.dataset import Dataset, load_dataset
from docab.runner.workspace import DOCUMENT_DIR, copy_document
from docab.usage import Usage

TRAIL_KEY = "docab"
DEFAULT_CONFIG = "demo"


class TaskQuestion(QuestionInfo):
    """A sample's metadata in this task: the question's facts, its text (for the answer extraction)
    and where its converted document is."""

    question: str
    document_dir: str


# -- tools: docab's blocks <-> Inspect content --------------------------------------------------------


def inspect_content(blocks: Sequence[Block]) -> InspectToolResult:
    """docab blocks as an Inspect tool result: plain text when there is no image."""
    if all(isinstance(b, Text) for b in blocks):
        return "\n".join(b.text for b in blocks if isinstance(b, Text))
    content: list[ContentText | ContentImage | ContentAudio | ContentVideo | ContentDocument] = []
    for block in blocks:
        if isinstance(block, Text):
            content.append(ContentText(text=block.text))
        else:
            encoded = base64.b64encode(block.data).decode("ascii")
            content.append(ContentImage(image=f"data:{block.media_type};base64,{encoded}"))
    return content


def docab_blocks(result: InspectToolResult) -> tuple[Block, ...]:
    """An Inspect tool result (text, content or a list of them) as docab blocks."""
    items: list[Any] = result if isinstance(result, list) else [result]
    blocks: list[Block] = []
    for item in items:
        if isinstance(item, ContentText):
            blocks.append(Text(item.text))
        elif isinstance(item, ContentImage):
            decoded = decode_data_url(item.image)
            blocks.append(Image(decoded[1], decoded[0]) if decoded else Text(f"[image: {item.image[:200]}]"))
        elif isinstance(item, str | int | float | bool):
            blocks.append(Text(str(item)))
        else:
            blocks.append(Text(f"[{type(item).__name__} content not shown]"))
    return tuple(blocks)


class SampleRecorder:
    """What one sample's agent did, as the trail records it; fed by the budgeted tools and the loop.
    (A plain class: Inspect may load this file as a module outside ``sys.modules``, where
    ``dataclasses`` cannot resolve postponed annotations.)"""

    def __init__(
        self,
        arm: str,
        protocol: AnswerProtocol,
        tracker: ReadTracker,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.arm = arm
        self.protocol = protocol
        self.tracker = tracker
        self.clock = clock
        self.turns = 0
        self.usage: list[Usage] = []
        self.model_time_s = 0.0
        self.tool_calls: list[TrailToolCall] = []
        self.submission: str | None = None  # the scored answer of a valid submit_answer call
        self.limit_hit: str | None = None

    def trail(self, **answer: Any) -> SampleTrail:
        return SampleTrail(
            arm=self.arm,
            answer_protocol=self.protocol,
            turns=self.turns,
            usage=list(self.usage),
            model_time_s=round(self.model_time_s, 6),
            tool_time_s=round(sum(c.duration_s for c in self.tool_calls), 6),
            tool_calls=list(self.tool_calls),
            pages_read=list(self.tracker.pages_read),
            pages_seen=list(self.tracker.pages_seen),
            page_shares=list(self.tracker.page_shares),
            sections_read=list(self.tracker.sections),
            limit_hit=self.limit_hit,
            **answer,
        )


def tool_params(schema: Mapping[str, Any]) -> ToolParams:
    """A JSON schema as Inspect tool parameters; Inspect requires a description for each (the name
    stands in where the schema has none, as Inspect's MCP client does)."""
    params = ToolParams.model_validate(dict(schema))
    for name, param in params.properties.items():
        param.description = param.description or name
    return params


def budgeted_tool(
    name: str,
    description: str,
    parameters: ToolParams,
    run: Callable[[dict[str, Any]], Awaitable[ToolResult]],
    budget: OutputBudget,
    recorder: SampleRecorder,
) -> Tool:
    """An Inspect tool whose every result passes through ``budget`` and is recorded (time, cut, pages)."""

    async def execute(**arguments: Any) -> InspectToolResult:
        started = recorder.clock()
        result = budget.apply(await run(arguments))
        recorder.tool_calls.append(
            TrailToolCall(
                name=name,
                duration_s=round(recorder.clock() - started, 6),
                is_error=result.is_error,
                truncated=result.truncated,
                arguments={
                    k: v for k, v in arguments.items() if isinstance(v, str | int | float | bool | None)
                },
            )
        )
        recorder.tracker.observe(ToolCall(id="", name=name, arguments=arguments), result)
        if result.is_error:
            raise ToolError(result.text)
        return inspect_content(result.blocks)

    return ToolDef(execute, name=name, description=description, parameters=parameters).as_tool()


def _inspect_runner(tool: Tool) -> Callable[[dict[str, Any]], Awaitable[ToolResult]]:
    async def run(arguments: dict[str, Any]) -> ToolResult:
        try:
            return ToolResult(blocks=docab_blocks(await tool(**arguments)))
        except ToolError as exc:
            return ToolResult.error(exc.message)

    return run


def _submit_tool(recorder: SampleRecorder) -> Tool:
    async def submit(**arguments: Any) -> str:
        submission = parse_submission(arguments)
        if isinstance(submission, str):
            raise ToolError(submission)
        recorder.submission = submission.scored_answer
        return "answer submitted"

    return ToolDef(
        submit,
        name=SUBMIT_TOOL.name,
        description=SUBMIT_TOOL.description,
        parameters=tool_params(SUBMIT_TOOL.input_schema),
    ).as_tool()


# -- solver ----------------------------------------------------------------------------------------------


def _usage(output: ModelOutput, model: str) -> Usage:
    usage = output.usage
    if usage is None:
        return Usage(model=model)
    return Usage(
        input_uncached=usage.input_tokens,
        cache_read=usage.input_tokens_cache_read or 0,
        cache_write=usage.input_tokens_cache_write or 0,
        output=usage.output_tokens,
        reasoning=usage.reasoning_tokens or 0,
        role="agent",
        model=model,
    )


@solver
def docab_agent(config: str = DEFAULT_CONFIG, arm: str = "") -> Solver:
    """docab's agent for one arm of a run config: workspace, budgeted tools, turn loop (module docstring)."""
    run_config = load_config(config)
    arm_config = _arm(run_config, arm)
    protocol = run_config.answer.protocol
    budget = output_budget(run_config.output_budget)
    system = run_config.system_prompt(arm_config, protocol_instructions(protocol))

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        question = TaskQuestion.model_validate(state.metadata)
        with tempfile.TemporaryDirectory(prefix="docab-inspect-") as folder:
            root = Path(folder)
            source = Path(question.document_dir)
            copy_document(source, root / DOCUMENT_DIR)
            text = (root / DOCUMENT_DIR / "document.md").read_text(encoding="utf-8", errors="replace")
            meta = source / "meta.json"
            spans = page_spans(meta.read_text(encoding="utf-8", errors="replace")) if meta.is_file() else None
            tracker = ReadTracker(PageMap.from_markdown(text, spans=spans), workspace_root=str(root))
            recorder = SampleRecorder(arm_config.name, protocol, tracker)
            try:
                async with AsyncExitStack() as stack:
                    state.tools = await _tools(run_config, arm_config, root, budget, recorder, stack)
                    state.messages.insert(0, ChatMessageSystem(content=system))
                    await _turns(state, generate, run_config, recorder)
            finally:
                trail = recorder.trail(raw_answer=recorder.submission or "")
                state.store.set(TRAIL_KEY, trail.model_dump(mode="json"))
        return state

    return solve


def _arm(config: RunConfig, name: str) -> ArmConfig:
    if not name:
        return config.arms[0]
    for arm in config.arms:
        if arm.name == name:
            return arm
    raise ValueError(
        f"the config {config.name!r} has no arm {name!r}; its arms: {', '.join(a.name for a in config.arms)}"
    )


async def _tools(
    config: RunConfig,
    arm: ArmConfig,
    root: Path,
    budget: OutputBudget,
    recorder: SampleRecorder,
    stack: AsyncExitStack,
) -> list[Tool]:
    tools: list[Tool] = []
    if "fs" in arm.tools:
        for fs_tool in filesystem_tools(root):
            spec = fs_tool.spec
            tools.append(
                budgeted_tool(
                    spec.name,
                    spec.description,
                    tool_params(spec.input_schema),
                    fs_tool.call,
                    budget,
                    recorder,
                )
            )
    for name in arm.mcp_servers:
        server_config = config.mcp_servers[name]
        command, args, env = server_spec(name, server_config).render(root)
        server = mcp_server_stdio(name=name, command=command, args=args, cwd=root, env=env or None)
        await stack.enter_async_context(server)
        for mcp_tool in await server.tools():
            definition = ToolDef(mcp_tool)
            if server_config.tools is not None and definition.name not in server_config.tools:
                continue
            tools.append(
                budgeted_tool(
                    definition.name,
                    definition.description,
                    definition.parameters,
                    _inspect_runner(mcp_tool),
                    budget,
                    recorder,
                )
            )
    if config.answer.protocol == "submit_tool":
        tools.append(_submit_tool(recorder))
    return tools


async def _turns(state: TaskState, generate: Generate, config: RunConfig, recorder: SampleRecorder) -> None:
    """Model turns until an answer: a submission (submit_tool) or a reply without tool calls (extraction)."""
    model = str(state.model)
    for _ in range(config.limits.max_turns):
        started = recorder.clock()
        state = await generate(state, tool_calls="single", max_tokens=config.limits.max_output_tokens)
        recorder.turns += 1
        recorder.model_time_s += (
            state.output.time if state.output.time is not None else recorder.clock() - started
        )
        recorder.usage.append(_usage(state.output, model))
        if recorder.submission is not None:
            return
        if not state.output.message.tool_calls:
            if config.answer.protocol == "extraction":
                return
            state.messages.append(ChatMessageUser(content=REMINDER))
    recorder.limit_hit = "turns"


# -- scorer ----------------------------------------------------------------------------------------------


class InspectCompletion:
    """An Inspect model behind the benchmark's ``complete(messages, *, max_tokens, temperature)``."""

    def __init__(self, model: Model) -> None:
        self.model = model

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, max_tokens: int, temperature: float
    ) -> Any:
        from docab_benchmark.mmlongbench.extraction import Completion

        chat: list[ChatMessage] = []
        for message in messages:
            role, content = message.get("role"), message.get("content", "")
            if role == "system":
                chat.append(ChatMessageSystem(content=content))
            elif role == "assistant":
                chat.append(ChatMessageAssistant(content=content))
            else:
                chat.append(ChatMessageUser(content=content))
        output = await self.model.generate(
            chat, config=GenerateConfig(max_tokens=max_tokens, temperature=temperature)
        )
        usage = _usage(output, str(self.model)).with_role("extractor")
        return Completion(text=output.completion, usage=usage)


@scorer(metrics=[accuracy(), stderr()], name=SCORE_NAME)
def docab_score(config: str = DEFAULT_CONFIG, extraction_prompt: str | None = None) -> Scorer:
    """The benchmark's official scoring of the submitted or extracted answer (module docstring);
    ``extraction_prompt``: the data folder's own prompt file (default: the bundled copy)."""
    from docab_benchmark.mmlongbench.extraction import load_prompt
    from docab_benchmark.mmlongbench.scoring import score_answer

    run_config = load_config(config)
    prompt = load_prompt(extraction_prompt)

    async def score(state: TaskState, target: Target) -> Score:
        from docab.agent.answer import BenchmarkExtractor

        question = TaskQuestion.model_validate(state.metadata)
        stored = state.store.get(TRAIL_KEY)
        trail = SampleTrail.model_validate(stored) if isinstance(stored, dict) else None
        if trail is None:
            trail = SampleTrail(arm="", answer_protocol=run_config.answer.protocol)
        errors: list[str] = []
        usage = list(trail.usage)
        if trail.answer_protocol == "submit_tool":
            raw = extracted = trail.raw_answer  # the submission, as scored
        else:
            raw = state.output.completion
            extractor = BenchmarkExtractor(InspectCompletion(get_model(role="grader")), prompt=prompt)
            extraction = await extractor.extract(question.question, raw)
            extracted = extraction.answer
            usage += list(extraction.usage)
            if extraction.error:
                errors.append(extraction.error)
        value = 0.0
        if trail.limit_hit is None and not errors and (extracted or trail.answer_protocol == "extraction"):
            try:
                value = score_answer(target.text, extracted, question.answer_format)
            except ValueError as exc:
                errors.append(str(exc))
        done = trail.model_copy(
            update={
                "raw_answer": raw,
                "extracted_answer": extracted,
                "usage": usage,
                "errors": errors,
                "scored": True,
            }
        )
        state.store.set(TRAIL_KEY, done.model_dump(mode="json"))
        return Score(
            value=value,
            answer=extracted,
            explanation=f"gold {target.text!r} ({question.answer_format}); "
            + (f"limit {trail.limit_hit}" if trail.limit_hit else f"answer {extracted!r}"),
            metadata={TRAIL_KEY: done.model_dump(mode="json")},
        )

    return score


# -- the task --------------------------------------------------------------------------------------------


def docab_dataset(dataset: Dataset, config: RunConfig) -> MemoryDataset:
    """A docab dataset (``docab.runner.dataset.load_dataset``) as Inspect samples."""
    samples = [
        Sample(
            id=s.qid,
            input=config.user_prompt(s.question),
            target=s.answer,
            metadata=TaskQuestion(
                doc_id=s.doc_id,
                doc_type=s.doc_type,
                answer_format=s.answer_format,
                evidence_pages=list(s.evidence_pages),
                evidence_sources=list(s.evidence_sources),
                question=s.question,
                document_dir=str(s.document_dir),
            ).model_dump(),
        )
        for s in dataset.samples
    ]
    return MemoryDataset(samples, name=dataset.name, location=dataset.version)


@task
def mmlongbench_doc(config: str = DEFAULT_CONFIG, arm: str = "") -> Task:
    """docab's benchmark (MMLongBench-Doc or the built-in suite) for one arm of a docab run config."""
    run_config = load_config(config)
    chosen = _arm(run_config, arm)
    budget = output_budget(run_config.output_budget)
    limits = run_config.limits
    dataset = load_dataset(run_config.dataset, results_dir=Path("results"))
    prompt = str(dataset.extraction_prompt) if dataset.extraction_prompt else None
    return Task(
        dataset=docab_dataset(dataset, run_config),
        solver=docab_agent(config=config, arm=chosen.name),
        scorer=docab_score(config=config, extraction_prompt=prompt),
        config=GenerateConfig(
            max_tool_output=budget.chars_for(budget.limit) * 4 + 1024,  # docab's budget cuts first
            max_tokens=limits.max_output_tokens,
        ),
        token_limit=limits.max_tokens,
        time_limit=int(limits.max_wall_s),
        display_name=f"{run_config.name}: {chosen.name}",
        metadata={
            "docab": {
                "arm": chosen.name,
                "arm_index": run_config.arms.index(chosen),
                "config": run_config.name,
                "answer_protocol": run_config.answer.protocol,
            }
        },
    )


__all__ = ["docab_agent", "docab_dataset", "docab_score", "mmlongbench_doc"]
