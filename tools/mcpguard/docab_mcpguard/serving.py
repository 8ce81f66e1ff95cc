"""The MCP conventions every docab server follows, on top of the SDK's ``MCPServer``.

- :class:`ConventionalServer`: title, website and icon in ``serverInfo``; tool argument errors as
  one sentence (:mod:`docab_mcpguard.arguments`), unknown arguments refused; ``logging/setLevel``
  and the servers' own log records sent to the client as ``notifications/message`` while a call
  runs; prompts rendered by plain functions (:class:`PromptSpec`).
- :class:`CallNotes`: what one tool call tells its client while it runs (progress, when the
  client sent a progress token, and log messages), callable from the event loop and from worker
  threads, sent in order and flushed before the result.
- :class:`ClientRoots`: the allowed folders of a server started without any, taken from the
  client's MCP roots (``roots/list`` after the handshake, re-read after
  ``notifications/roots/list_changed``; on protocol 2026-07-28, asked for inside the call).
- :class:`StructuredOutput`: a base for output schemas without pydantic's titles (each schema
  field is read by clients that keep the tool list; titles only repeat the names).
- :func:`svg_icon`: an icon as an inline ``data:`` URI, so no network is needed to show it.

Logging and roots are deprecated in protocol 2026-07-28 (SEP-2577), and the SDK warns on each
use; they are how clients of 2025-11-25 and earlier (the desktop clients and the Inspector today)
receive logs and declare folders, so they are used, with the warning silenced at the call. On
2026-07-28 the SDK delivers a log message only when the request opted in, and roots come through
``input_required`` rounds (:class:`ClientRoots`).

Why one module: these conventions hook the same SDK server object (its request handlers, its
session, the context of the call in flight); apart, each would reach into the others' private
hooks.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import logging
import os
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit
from urllib.request import url2pathname

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    EmptyResult,
    GetPromptResult,
    Icon,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    LoggingLevel,
    NotificationParams,
    PromptArgument,
    Root,
    SetLevelRequestParams,
    ToolAnnotations,
)
from mcp.types import CallToolResult as CallToolResult
from mcp.types import Prompt as MCPPrompt
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError

from docab_mcpguard.access import ServerSettings, path_remedy
from docab_mcpguard.arguments import (
    ArgumentSpec,
    argument_specs,
    describe_problems,
    problems_from_validation,
    shown_name,
    unknown_arguments,
)
from docab_mcpguard.messages import DEFAULT_MAX_MESSAGE_BYTES, bounded_stdio_server
from docab_mcpguard.paths import PathPolicy

log = logging.getLogger("docab_mcpguard")

ServerContext: TypeAlias = Context[Any, Any]
LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
DEFAULT_CLIENT_LEVEL: LoggingLevel = "info"  # until the client sends logging/setLevel
PROGRESS_INTERVAL_S = 0.1  # at most ten progress notifications a second; the last one always goes
FLUSH_TIMEOUT_S = 5.0  # a client that stops reading cannot hold a result back longer than this
ROOTS_KEY = "roots"  # the key of the roots request inside an InputRequiredResult (2026-07-28)


def is_modern(ctx: ServerContext) -> bool:
    """Does this call speak protocol 2026-07-28 or later (no server-initiated requests)?"""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _level_of(levelno: int) -> LoggingLevel:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


# -- icons and output schemas ----------------------------------------------------------------------


def svg_icon(svg: str) -> Icon:
    """An SVG icon as an inline ``data:`` URI (no network to show it; ``sizes: any``)."""
    data = base64.b64encode(svg.strip().encode("utf-8")).decode("ascii")
    return Icon(src=f"data:image/svg+xml;base64,{data}", mime_type="image/svg+xml", sizes=["any"])


def _compact(schema: dict[str, Any]) -> None:
    schema.pop("title", None)
    schema.pop("description", None)
    for value in schema.get("properties", {}).values():
        if isinstance(value, dict):
            value.pop("title", None)


class StructuredOutput(BaseModel):
    """Base of the servers' output models: the JSON schema keeps types, fields and defaults, not
    titles or descriptions (the code documents the fields; clients keep the schema per tool)."""

    model_config = ConfigDict(json_schema_extra=_compact)


def log_to_stderr(prefix: str, level: int | str, *, show_level: bool = True) -> None:
    """Server logs on stderr at ``level`` and above, whatever the loggers' own levels: the loggers
    a :class:`ConventionalServer` forwards to its client pass everything to their handlers."""
    handler = logging.StreamHandler()
    handler.setLevel(level)
    shown = "%(levelname)s %(message)s" if show_level else "%(message)s"
    handler.setFormatter(logging.Formatter(f"{prefix}: {shown}"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


# -- what one call tells its client -------------------------------------------------------------


@dataclass(frozen=True)
class _Progress:
    done: float
    total: float | None
    message: str | None


@dataclass(frozen=True)
class _LogLine:
    level: LoggingLevel
    message: str
    logger: str


_CURRENT: contextvars.ContextVar[CallNotes | None] = contextvars.ContextVar("docab_call_notes", default=None)


class CallNotes:
    """Progress and log messages of one tool call, sent to its client in order.

    :meth:`progress` and :meth:`log` may be called from the event loop or from any thread (a
    worker indexing a folder, say); they queue the note and return. Progress goes only when
    the client sent a progress token (the SDK drops it otherwise). Log messages go when their level is at or above
    the client's (``logging/setLevel``; on 2026-07-28, the request's own opt-in). Use through
    :meth:`ConventionalServer.reporting`, which also routes the server's log records here.
    """

    def __init__(self, ctx: ServerContext | None, level: Callable[[], LoggingLevel]) -> None:
        self._ctx = ctx
        self._level = level
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[_Progress | _LogLine] = asyncio.Queue()
        self._lock = threading.Lock()
        self._last_progress = 0.0
        self._last_done = -1.0
        self._sender: asyncio.Task[None] | None = None
        if ctx is not None:
            self._sender = self._loop.create_task(self._send_all())

    def progress(
        self, done: float, total: float | None = None, message: str | None = None, *, always: bool = False
    ) -> None:
        """Queue a progress notification. Values only go up (MCP requires it: a value not above the
        last one sent is dropped); at most every :data:`PROGRESS_INTERVAL_S`, except the
        completion (``done == total``) and notes sent ``always`` (a few steps worth naming)."""
        if self._ctx is None:
            return
        always = always or (total is not None and done >= total)
        with self._lock:
            now = time.monotonic()
            if done <= self._last_done or (not always and now - self._last_progress < PROGRESS_INTERVAL_S):
                return
            self._last_progress, self._last_done = now, done
        self._put(_Progress(done, total, message))

    def log(self, level: LoggingLevel, message: str, logger: str = "") -> None:
        if self._ctx is None or LEVELS.index(level) < LEVELS.index(self._level()):
            return
        self._put(_LogLine(level, message, logger))

    def _put(self, note: _Progress | _LogLine) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._queue.put_nowait(note)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed: the call is long over
                self._loop.call_soon_threadsafe(self._queue.put_nowait, note)

    async def _send_all(self) -> None:
        ctx = self._ctx
        assert ctx is not None
        while True:
            note = await self._queue.get()
            try:
                if isinstance(note, _Progress):
                    await ctx.report_progress(note.done, note.total, note.message)
                else:
                    with warnings.catch_warnings():  # the deprecation warns when called, not awaited
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        sending = ctx.session.send_log_message(
                            level=note.level,
                            data=note.message,
                            logger=note.logger or None,
                            related_request_id=ctx.request_context.request_id,
                        )
                    await sending
            except Exception:  # a client gone or a closed stream: the note is dropped
                log.debug("a notification to the client could not be sent", exc_info=True)
            finally:
                self._queue.task_done()

    async def close(self) -> None:
        """Send what is queued (bounded by :data:`FLUSH_TIMEOUT_S`), then stop."""
        if self._sender is None:
            return
        try:
            await asyncio.wait_for(self._queue.join(), FLUSH_TIMEOUT_S)
        except TimeoutError:
            log.debug("notifications still queued after %s s were dropped", FLUSH_TIMEOUT_S)
        finally:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sender


class ClientLogHandler(logging.Handler):
    """Sends the log records of a running call to its client (``notifications/message``)."""

    def emit(self, record: logging.LogRecord) -> None:
        notes = _CURRENT.get()
        if notes is None:
            return
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[0] is not None:
                # The type only: a traceback is for the server's own log, not the client.
                message = f"{message} ({record.exc_info[0].__name__})"
        except Exception:
            return
        notes.log(_level_of(record.levelno), message, record.name)


class AtRootLevel(logging.Handler):
    """Hands a forwarded logger's records to the process's own handlers at the root logger's level.

    A forwarded logger makes DEBUG records so that a client asking for them gets them. Propagated
    as usual, they would also reach every root handler whatever the root's level: a server built
    in-process (the SDK's own stderr handler has no level of its own) would print a line per call.
    """

    def emit(self, record: logging.LogRecord) -> None:
        root = logging.getLogger()
        if record.levelno >= root.level:
            root.handle(record)


# -- roots ------------------------------------------------------------------------------------------


def folders_of(roots: Sequence[Root]) -> tuple[list[str], list[str]]:
    """The local folders among a client's roots, and a line for each root that is not one
    (another scheme or machine, a file, a folder that does not exist)."""
    folders: list[str] = []
    skipped: list[str] = []
    for root in roots:
        parts = urlsplit(str(root.uri))
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            skipped.append(f"{root.uri}: not a file:// URI of this machine")
            continue
        # url2pathname decodes the percent escapes: decoding twice would turn a folder named
        # "%2E%2E" into "..", a root the client never gave.
        path = url2pathname(parts.path)
        if not os.path.isdir(path):
            skipped.append(f"{root.uri}: not an existing folder")
            continue
        folders.append(path)
    return folders, skipped


class ClientRoots:
    """The allowed folders of a server started without any: its client's MCP roots.

    After the handshake (protocol 2025-11-25 and earlier) the roots are asked for once with
    ``roots/list`` and again after each ``notifications/roots/list_changed``. On 2026-07-28 a
    server may not send requests, so a call that needs the roots answers with an
    ``InputRequiredResult`` asking for them, and reads them from the client's retry. A client
    that declares no roots capability gets ``None`` (the server then uses its own default).
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.remedy = path_remedy(settings, client_roots=True)
        self.policy: PathPolicy | None = None  # the roots last read
        self._generation = 0  # bumped by each list_changed notification
        self._read_generation = -1

    def changed(self) -> None:
        """The client said its roots changed: read them again before the next use."""
        self._generation += 1

    def _policy(self, roots: Sequence[Root]) -> PathPolicy:
        folders, skipped = folders_of(roots)
        for line in skipped:
            log.warning("client root skipped: %s", line)
        if not folders:
            return PathPolicy((), remedy=self.remedy)
        try:
            return PathPolicy.from_dirs(folders, what="client root", remedy=self.remedy)
        except ValueError:  # a folder removed between the check and here
            return PathPolicy((), remedy=self.remedy)

    async def current(self, ctx: ServerContext) -> PathPolicy | InputRequiredResult | None:
        """The client's roots as a policy; an ``InputRequiredResult`` to return from the call when
        they must be asked for (2026-07-28); None when the client declares no roots."""
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return None
        if is_modern(ctx):
            answered = (ctx.input_responses or {}).get(ROOTS_KEY)
            if isinstance(answered, ListRootsResult):
                self.policy = self._policy(answered.roots)
                return self.policy
            return InputRequiredResult(input_requests={ROOTS_KEY: ListRootsRequest()})
        if self.policy is None or self._read_generation != self._generation:
            generation = self._generation
            try:
                with warnings.catch_warnings():  # the deprecation warns when called, not awaited
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    asking = ctx.session.list_roots()
                listed = await asking
            except (MCPError, ValidationError) as exc:
                # No folder until they are read (the next call asks again): the roots last read
                # may be the ones the client just withdrew, and None would mean the server's
                # default folders, wider than any root the client gave.
                log.warning("the client's roots could not be read: %s", exc)
                self.policy = PathPolicy((), remedy=self.remedy)
                return self.policy
            self.policy = self._policy(listed.roots)
            self._read_generation = generation
        return self.policy

    def last_known(self) -> PathPolicy | None:
        """The roots last read, for requests that cannot ask (``resources/list`` on 2026-07-28)."""
        return self.policy


# -- prompts ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptSpec:
    """A prompt the server offers: its name, title, description and string arguments
    (``(name, description, required)``)."""

    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...] = ()


PromptRenderer = Callable[
    [Mapping[str, str], ServerContext], Awaitable[GetPromptResult | InputRequiredResult]
]


# -- the server -------------------------------------------------------------------------------------


@dataclass
class _ToolArguments:
    specs: dict[str, dict[str, ArgumentSpec]] = field(default_factory=dict)


class ConventionalServer(MCPServer[Any]):
    """``MCPServer`` with the conventions of the docab servers (see the module's description).

    ``loggers``: names of the loggers whose records a running call sends its client.
    """

    def __init__(
        self,
        name: str,
        *,
        title: str,
        version: str,
        instructions: str,
        website_url: str,
        icon: Icon,
        loggers: Sequence[str] = (),
        lifespan: Any = None,
        log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        message_setting: str = "--max-message-mb",
    ) -> None:
        self.max_message_bytes = max_message_bytes  # stdin messages (docab_mcpguard.messages)
        self.message_setting = message_setting  # what raises that cap, for the error
        super().__init__(
            name,
            title=title,
            version=version,
            instructions=instructions,
            website_url=website_url,
            icons=[icon],
            lifespan=lifespan,
            log_level=log_level,
        )
        self.client_level: LoggingLevel = DEFAULT_CLIENT_LEVEL
        self._arguments = _ToolArguments()
        self._prompts: dict[str, tuple[PromptSpec, PromptRenderer]] = {}
        self._roots: ClientRoots | None = None
        self._on_roots_changed: list[Callable[[ServerRequestContext[Any]], Awaitable[None]]] = []
        lowlevel = self._lowlevel_server
        lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)
        lowlevel.add_notification_handler(
            "notifications/roots/list_changed", NotificationParams, self._roots_changed
        )
        handler, process = ClientLogHandler(), AtRootLevel()
        for logger_name in loggers:
            logger = logging.getLogger(logger_name)
            if not any(isinstance(existing, ClientLogHandler) for existing in logger.handlers):
                logger.addHandler(handler)
                logger.addHandler(process)
            logger.setLevel(logging.DEBUG)  # the handlers choose: the client's level, the root's level
            logger.propagate = False  # AtRootLevel hands records on instead

    async def run_stdio_async(self) -> None:
        """Serve on stdio, reading messages of at most ``max_message_bytes`` each."""
        await self.serve_stdio(self._lowlevel_server.create_initialization_options())

    async def serve_stdio(self, options: Any) -> None:
        """Serve on stdio with these initialization options (a subclass may declare more)."""
        async with bounded_stdio_server(
            self.max_message_bytes, setting=self.message_setting, server=self.name
        ) as (read_stream, write_stream):
            await self._lowlevel_server.run(read_stream, write_stream, options)

    # -- logging -------------------------------------------------------------------------------

    async def _set_level(self, _ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
        self.client_level = params.level
        return EmptyResult()

    @contextlib.asynccontextmanager
    async def reporting(self, ctx: ServerContext | None) -> AsyncIterator[CallNotes]:
        """The notes of one call: its progress and log messages go to the client while it runs;
        whatever is queued is sent before the call returns."""
        notes = CallNotes(ctx, lambda: self.client_level)
        token = _CURRENT.set(notes)
        try:
            yield notes
        finally:
            _CURRENT.reset(token)
            await notes.close()

    # -- roots -------------------------------------------------------------------------------------

    def follow_roots(self, roots: ClientRoots) -> None:
        """Take allowed folders from the client's roots (a server started without any)."""
        self._roots = roots

    def on_roots_changed(self, callback: Callable[[ServerRequestContext[Any]], Awaitable[None]]) -> None:
        self._on_roots_changed.append(callback)

    async def _roots_changed(self, ctx: ServerRequestContext[Any], _params: NotificationParams) -> None:
        if self._roots is None:
            return
        self._roots.changed()
        for callback in self._on_roots_changed:
            try:
                await callback(ctx)
            except Exception:
                log.debug("a roots-changed callback failed", exc_info=True)

    # -- tool arguments ------------------------------------------------------------------------

    async def _specs(self, name: str) -> dict[str, ArgumentSpec] | None:
        cached = self._arguments.specs.get(name)
        if cached is None:
            for tool in await self.list_tools():
                self._arguments.specs[tool.name] = argument_specs(tool.input_schema)
            cached = self._arguments.specs.get(name)
        return cached

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: ServerContext | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool; a bad or unknown argument is a ToolError whose text is one sentence per
        argument: its name, its limit from the input schema and the value given."""
        specs = await self._specs(name)
        if specs is None:
            tools = ", ".join(sorted(self._arguments.specs))
            raise ToolError(f"Unknown tool: {shown_name(name)}; the tools are {tools}")
        unknown = unknown_arguments(specs, arguments)
        if unknown:
            raise ToolError(describe_problems(name, unknown, specs, arguments))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            # Argument validation failed (a crash inside the tool is an UnexpectedToolError).
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                problems = problems_from_validation(cause.errors(include_url=False))
                if problems:
                    raise ToolError(describe_problems(name, problems, specs, arguments)) from None
            raise

    # -- prompts --------------------------------------------------------------------------------

    def add_prompt_renderer(self, spec: PromptSpec, render: PromptRenderer) -> None:
        """Offer a prompt whose messages ``render`` builds from its (string) arguments."""
        self._prompts[spec.name] = (spec, render)

    async def list_prompts(self) -> list[MCPPrompt]:
        listed = await super().list_prompts()
        return listed + [
            MCPPrompt(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                arguments=[
                    PromptArgument(name=argument, description=description, required=required)
                    for argument, description, required in spec.arguments
                ],
            )
            for spec, _render in self._prompts.values()
        ]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: ServerContext | None = None
    ) -> GetPromptResult | InputRequiredResult:
        entry = self._prompts.get(name)
        if entry is None:
            names = [prompt.name for prompt in await self.list_prompts()]
            if name not in names:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"there is no prompt {shown_name(name)}; the prompts are {', '.join(names)}",
                )
            return await super().get_prompt(name, arguments, context)
        spec, render = entry
        given = {str(key): str(value) for key, value in (arguments or {}).items()}
        known = [argument for argument, _description, _required in spec.arguments]
        unknown = [key for key in given if key not in known]
        if unknown:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"the {name} prompt has no argument {shown_name(unknown[0])}; its arguments are "
                f"{', '.join(known)}",
            )
        missing = [
            argument for argument, _d, required in spec.arguments if required and not given.get(argument)
        ]
        if missing:
            raise MCPError(
                code=INVALID_PARAMS, message=f"the {name} prompt needs the argument {missing[0]} (missing)"
            )
        if context is None:
            context = Context(mcp_server=self)
        try:
            return await render(given, context)
        except MCPError:
            raise
        except Exception:  # a bug: its text and traceback are for the server's log, not the client
            log.exception("the %s prompt failed", name)
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"the {name} prompt hit an internal error; the server log has details",
            ) from None


def tool_annotations(
    title: str, *, read_only: bool, destructive: bool, idempotent: bool, open_world: bool
) -> ToolAnnotations:
    """Tool annotations with the title repeated for clients that read only ``annotations.title``."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )
