"""A size cap on the JSON-RPC messages a stdio server reads (issue 26 item 7).

The MCP SDK's stdio transport reads stdin a line at a time with no limit, so one 300 MB line cost
a server 1.2 GB before it was even parsed. :func:`bounded_stdio_server` serves the same transport
over a reader that takes stdin in chunks of :data:`CHUNK_BYTES` and never holds more than the cap
of one line: a longer line is skipped as it streams past (only its first and last few kilobytes
are kept, to find its id), the server answers it with a JSON-RPC error (``-32600``, the sizes and
the setting that raises the cap; ``id`` null when it could not be found), writes one line on
stderr, and goes on reading the next message.

:class:`LineSplitter` is the pure part: bytes in, lines and :class:`Oversized` notes out.

What the server writes is always valid JSON, too. Python reads a file name that is not UTF-8
(``b"bad\xff.md"``) as a string with a lone surrogate (``"bad\udcff.md"``), which JSON cannot
carry: the SDK's writer raised on it, its task group ended and the server died, so one such
name in an allowed folder took md-vision down for every later call. Each outgoing message that
holds one is rewritten with :func:`printable` (``bad\xff.md``) on its way to the writer.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError
from pydantic import BaseModel

from docab_mcpguard.access import DEFAULT_MAX_MESSAGE_BYTES as DEFAULT_MAX_MESSAGE_BYTES

CHUNK_BYTES = 256 * 1024  # read from stdin at a time
_KEPT = 4096  # bytes kept of an oversized line's start and end, where its id is looked for
_ID = rb'("(?:[^"\\]|\\.)*"|-?\d+)'
_ID_FIRST = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID)
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the cap, skipped. ``request_id``: its top-level ``id`` when it stands
    first (or after ``"jsonrpc"``) or last in the object, else None."""

    size: int
    request_id: str | int | None


def _request_id(head: bytes, tail: bytes) -> str | int | None:
    match = _ID_FIRST.match(head) or _ID_LAST.search(tail)
    if match is None:
        return None
    raw = match[1]
    if raw.startswith(b'"'):
        import json

        with contextlib.suppress(ValueError):
            value = json.loads(raw)
            return value if isinstance(value, str) else None
        return None
    return int(raw)


class LineSplitter:
    """Splits a byte stream into lines of at most ``max_bytes`` (the line end not counted); a
    longer line becomes an :class:`Oversized` once it ends, and is never held whole."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._line = bytearray()
        self._skipping = False  # inside an oversized line
        self._skipped = 0  # its size so far
        self._head = b""
        self._tail = b""

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            self._take(piece)
            if end < 0:
                break
            out.append(self._finish_line())
            start = end + 1
        return out

    def finish(self) -> list[bytes | Oversized]:
        """The last line, when the stream ended without a line break."""
        if self._line or self._skipping:
            return [self._finish_line()]
        return []

    def _take(self, piece: bytes) -> None:
        if self._skipping:
            self._skipped += len(piece)
            self._tail = (self._tail + piece)[-_KEPT:]
            return
        if len(self._line) + len(piece) <= self.max_bytes:
            self._line += piece
            return
        self._skipping = True
        self._skipped = len(self._line) + len(piece)
        self._head = bytes((self._line + piece[:_KEPT])[:_KEPT])
        self._tail = (bytes(self._line[-_KEPT:]) + piece)[-_KEPT:]
        self._line = bytearray()

    def _finish_line(self) -> bytes | Oversized:
        if self._skipping:
            note = Oversized(self._skipped, _request_id(self._head, self._tail.rstrip(b"\r")))
            self._skipping, self._skipped, self._head, self._tail = False, 0, b"", b""
            return note
        line = bytes(self._line)
        self._line = bytearray()
        return line


def oversized_error(note: Oversized, max_bytes: int, setting: str) -> JSONRPCError:
    """The JSON-RPC error answering an oversized message."""
    return JSONRPCError(
        jsonrpc="2.0",
        id=note.request_id,
        error=ErrorData(
            code=INVALID_REQUEST,
            message=(
                f"message of {note.size:,} bytes is larger than this server accepts ({max_bytes:,} "
                f"bytes); it was not read. Send less, or raise the limit with {setting}"
            ),
        ),
    )


class _StdinLines:
    """The lines of a file descriptor, for the SDK's ``async for line in stdin``; oversized lines
    are answered through ``answer`` (set once the transport's write stream exists)."""

    def __init__(self, fd: int, max_bytes: int, setting: str, server: str) -> None:
        self._fd = fd
        self._splitter = LineSplitter(max_bytes)
        self._ready: list[bytes | Oversized] = []
        self._ended = False
        self._setting = setting
        self._server = server
        self.answer: Callable[[SessionMessage], Any] | None = None

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            while self._ready:
                item = self._ready.pop(0)
                if isinstance(item, Oversized):
                    await self._refuse(item)
                    continue
                if item.strip():
                    return item.decode("utf-8", "replace")
            if self._ended:
                raise StopAsyncIteration
            data = await anyio.to_thread.run_sync(os.read, self._fd, CHUNK_BYTES, abandon_on_cancel=True)
            if data:
                self._ready.extend(self._splitter.feed(data))
            else:
                self._ended = True
                self._ready.extend(self._splitter.finish())

    async def _refuse(self, note: Oversized) -> None:
        error = oversized_error(note, self._splitter.max_bytes, self._setting)
        with contextlib.suppress(OSError, ValueError):
            print(f"{self._server}: {error.error.message}", file=sys.stderr, flush=True)
        if self.answer is not None and note.request_id is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.answer(SessionMessage(error))


@asynccontextmanager
async def bounded_stdio_server(
    max_bytes: int, *, setting: str, server: str
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server()``, reading messages of at most ``max_bytes`` each (see the
    module). ``setting``: the flag or variable that raises the cap, named in the error; ``server``:
    the program's name, for the stderr line.

    Like the SDK, it serves from a private duplicate of stdin and points descriptor 0 at the null
    device meanwhile (children and stray reads see end of input); restored on exit.
    """
    try:
        wire = os.dup(0)
    except OSError:  # no stdin to claim: the SDK's own transport
        async with stdio_server() as (read_stream, write_stream):
            yield read_stream, PrintableSendStream(write_stream)
        return
    os.set_inheritable(wire, False)
    diverted = False
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        diverted = True
    lines = _StdinLines(wire, max_bytes, setting, server)
    try:
        # The SDK iterates whatever it is given with ``async for``: the reader stands in for the file.
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            printable_stream = PrintableSendStream(write_stream)
            lines.answer = printable_stream.send
            yield read_stream, printable_stream
    finally:
        if diverted:
            with contextlib.suppress(OSError):
                os.dup2(wire, 0)
        # ``wire`` stays open: the reading thread may still be blocked on it (as in the SDK).


# -- what is written -------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as an escape: ``\\xNN`` for a byte that Python
    read as a surrogate escape (a name that is not UTF-8), ``\\uNNNN`` for any other."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def holds_surrogates(value: object) -> bool:
    """Whether a message, or any string inside it, holds a lone surrogate."""
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, BaseModel):
        return holds_surrogates(vars(value)) or holds_surrogates(value.__pydantic_extra__)
    if isinstance(value, dict):
        return any(holds_surrogates(key) or holds_surrogates(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(holds_surrogates(item) for item in value)
    return False


def _printable_value(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_printable_value(key): _printable_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_printable_value(item) for item in value]
    return value


def printable_message(message: BaseModel) -> BaseModel:
    """``message`` with every string made :func:`printable` (the same fields set as before)."""
    fields = message.model_dump(by_alias=True, exclude_unset=True)
    return type(message).model_validate(_printable_value(fields))


class PrintableSendStream:
    """The stdio writer's stream, passing on only messages JSON can carry (see the module)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def send(self, item: SessionMessage) -> None:
        if holds_surrogates(item.message):
            item = SessionMessage(cast(Any, printable_message(item.message)), metadata=item.metadata)
        await self._stream.send(item)

    async def __aenter__(self) -> PrintableSendStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return cast("bool | None", await self._stream.__aexit__(*exc_info))

    def __getattr__(self, name: str) -> Any:  # close, aclose, clone ...: the stream's own
        return getattr(self._stream, name)
