"""Extraction in worker processes that can be stopped: a deadline, a memory cap, a bounded queue.

Extracting a page is CPU work that a hostile page can stretch from milliseconds to hours (and its
memory with it), and a thread cannot be stopped. So :class:`ExtractionPool` runs each extraction in
one of a few worker processes (``MARKFETCH_EXTRACT_WORKERS``), forked by a forkserver that has
imported the extractor already (a new worker is ready in milliseconds). A worker serves one page at
a time and stays for the next. The caller's coroutine waits for the answer without a thread, so:

- at the deadline (``MARKFETCH_EXTRACT_TIMEOUT_MS``) the worker is killed and the call fails with
  one ``[timeout]`` sentence;
- when the call is cancelled (an MCP ``notifications/cancelled``, the client gone, Ctrl-C) the
  worker is killed at once, and the next call gets a fresh one;
- a worker's address space is capped (``RLIMIT_AS``, ``MARKFETCH_EXTRACT_MEMORY_MB`` beyond what it
  maps when it starts): a page that needs more fails with ``[too_large]``, and the worker that
  grew large is replaced;
- calls beyond the workers wait in a queue of at most :data:`WAITING_PER_WORKER` per worker, each
  for at most the deadline; past that they fail at once with a ``[timeout]`` sentence that says
  the workers are busy.

Answers cross the pipe as a small JSON header and the document's UTF-8 text, never as a pickle: a
worker reads hostile pages, and what it sends back is data only.

Every worker dies with the server: its parent is the forkserver (``PR_SET_PDEATHSIG`` on Linux,
else a thread watching the parent), and the forkserver exits when the server's end of its "alive"
pipe closes, which the kernel does however the server ends. Where there is no forkserver, workers
are started with "spawn" (a fresh interpreter each: slower to start, the same otherwise).

Why one module: the worker's loop and the server's pool are two ends of one protocol (the framing,
the status words, which answers keep a worker and which retire it) and of one life cycle (the
forkserver's alive pipe, the parent-death signal, the kill on a deadline or a cancel); apart,
each half could only be read against the other, and the forkserver would have to preload both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
import weakref
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from docab_mcpguard import children
from markfetch.errors import ErrorCode, MarkfetchError

# What the forkserver imports once, so that a worker starts ready: the extractor and what it
# imports on its first page (a worker importing them itself takes 0.2-1 s).
PRELOAD = [
    "markfetch.sandbox",
    "markfetch.charset",
    "markfetch.extract",
    "markfetch.consensus",
    "markfetch.footnotes",
    "markfetch.furniture",
    "markfetch.htmlprep",
    "markfetch.markdown",
    "markfetch.nesting",
    "markfetch.preserved",
    "charset_normalizer",
    "trafilatura",
]
WORKER_NAME = b"markfetch-x"  # the worker's process name (Linux: /proc/PID/comm), for ps and tests
WAITING_PER_WORKER = 16
# A worker that has grown past this (its peak resident size) after a page is replaced, so that one
# large page does not keep its memory for the life of the server.
RETIRE_RSS_BYTES = 768 * 1024 * 1024
_HEADER = 4  # bytes of the header's length, big-endian, before the header and the text


@dataclass(frozen=True)
class ExtractLimits:
    """How many workers, how long one page may take, and how much memory a worker may add."""

    workers: int = 2
    timeout_ms: int = 30_000
    memory_mb: int = 2048  # 0: no cap

    @property
    def seconds(self) -> float:
        return self.timeout_ms / 1000


@dataclass(frozen=True)
class Extracted:
    """A worker's answer: the document's parts (``size`` bytes of text), or its error."""

    text: str
    title: str
    method: str
    size: int


# -- the worker ----------------------------------------------------------------------------------


def _frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    head = json.dumps(header).encode()
    return len(head).to_bytes(_HEADER, "big") + head + payload


def _unframe(message: bytes) -> tuple[dict[str, Any], bytes]:
    length = int.from_bytes(message[:_HEADER], "big")
    header = json.loads(message[_HEADER : _HEADER + length])
    if not isinstance(header, dict):
        raise ValueError("a worker's answer is not an object")
    return header, message[_HEADER + length :]


def extract_here(
    body: bytes, header_charset: str | None, url: str, max_bytes: int | None = None
) -> tuple[str, str, str]:
    """Decode and extract a fetched HTML body in this process: (markdown, title, method). With
    ``max_bytes`` (the document limit) the renderer stops at four times it: a page whose markdown
    would be far over the limit is refused while it is written, not after."""
    from markfetch.charset import decode_html
    from markfetch.extract import RENDER_BUDGET, ExtractionFailed, extract_article

    decoded = decode_html(body, header_charset)
    budget = RENDER_BUDGET if max_bytes is None else 4 * max_bytes
    try:
        article = extract_article(decoded.text, url, max_chars=budget)
    except ExtractionFailed as exc:
        raise MarkfetchError(ErrorCode.EXTRACTION_FAILED, f"{url}: {exc}") from None
    return article.markdown, article.title, article.method


def _answer(request: bytes) -> tuple[bytes, bool]:
    """The answer to one request, and whether this worker should be replaced after it."""
    header, body = _unframe(request)
    try:
        text, title, method = extract_here(body, header["charset"], header["url"], header["max_bytes"])
    except MarkfetchError as exc:
        reply: dict[str, Any] = {"status": "error", "code": exc.code.value, "message": exc.message}
        return _frame(reply), False
    except MemoryError:
        return _frame({"status": "memory"}), True
    except Exception as exc:  # a bug: the parent reports it as the server would
        return _frame({"status": "failed", "type": type(exc).__name__}), True
    data = text.encode("utf-8", "surrogatepass")
    retire = _peak_rss() > RETIRE_RSS_BYTES
    reply = {"status": "ok", "title": title, "method": method, "size": len(data), "retire": retire}
    if len(data) > header["max_bytes"]:
        data = b""  # the caller refuses it anyway: do not copy it across
    return _frame(reply, data), retire


def _peak_rss() -> int:
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return 0
    return peak if sys.platform == "darwin" else peak * 1024


def _serve(conn: Connection, memory_mb: int) -> None:
    """A worker: ignore Ctrl-C (the server handles it), die with its parent, keep stderr quiet,
    cap its memory, then answer requests until the server closes the pipe or asks it to go."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    _quiet()
    _limit_memory(memory_mb)
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            answer, retire = _answer(request)
        except MemoryError:
            answer, retire = _frame({"status": "memory"}), True
        try:
            conn.send_bytes(answer)
        except OSError:
            return
        if retire:
            return


def _quiet() -> None:
    """Nothing on stderr: the server's stderr is for fatal errors only (trafilatura warns, and a
    failed allocation in native code may print a line)."""
    import logging
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def _limit_memory(memory_mb: int) -> None:
    """Cap the address space at what is mapped now plus ``memory_mb`` (where it can be known)."""
    if memory_mb > 0:
        children.cap_address_space(memory_mb * 1024 * 1024)


def _die_with_parent() -> None:
    children.die_with_parent(WORKER_NAME, watcher="markfetch-parent-watch")


# -- the server's side ---------------------------------------------------------------------------


def _context() -> Any:
    return children.forkserver_context(PRELOAD)


def start_forkserver() -> None:
    """Start the forkserver now (call from the main thread, before serving), deaf to Ctrl-C and
    with its stderr on the null device. Ctrl-C at a terminal reaches the whole process group: the
    forkserver, importing the extractor, must not print a traceback of its own, and the workers it
    forks inherit the ignored signal. Nor may it print one when the server leaves while a worker
    is being started (it reads the request's descriptors from a closed socket): the server's
    stderr is for its own fatal errors. Returns at once; the extractor is imported meanwhile."""
    try:
        _context()
        from multiprocessing import forkserver
    except (ValueError, ImportError):
        return
    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.ExitStack() as restore:
        restore.callback(signal.signal, signal.SIGINT, previous)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
            saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
            restore.callback(os.close, saved)
            restore.callback(os.dup2, saved, 2)  # runs before the close above (last in, first out)
            os.dup2(devnull, 2)
            os.close(devnull)
        forkserver.ensure_running()


def kill_forkserver(*, reap: bool = True) -> None:
    """Kill the forkserver this process started, and with it (``PR_SET_PDEATHSIG``) its workers.

    Left alone it exits when the server does, but only once it has imported the extractor: a
    server stopped in its first seconds would leave it running a while. Call on the way out (with
    ``reap=False`` from a signal handler: nothing but the kill)."""
    try:
        from multiprocessing import forkserver

        server = forkserver._forkserver
        pid = getattr(server, "_forkserver_pid", None)
        if isinstance(pid, int):
            os.kill(pid, signal.SIGKILL)
            stop = getattr(server, "_stop", None)  # closes its pipe, reaps it, forgets it
            if reap and callable(stop):
                stop()
    except (ImportError, AttributeError, OSError, ValueError):
        pass


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        context = _context()
        self.conn, theirs = context.Pipe(duplex=True)
        self.process = context.Process(
            target=_serve, args=(theirs, memory_mb), name="markfetch-x", daemon=True
        )
        try:
            self.process.start()
        finally:
            theirs.close()  # the worker holds its end: its death reads as end of file here

    @property
    def pid(self) -> int | None:
        pid: int | None = self.process.pid
        return pid

    def kill(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.conn.close()
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if self.process.is_alive():
                self.process.kill()
            self.process.join(2)
            self.process.close()

    def exit_code(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.process.join(1)
            code: int | None = self.process.exitcode
            return code
        return None


async def _readable(conn: Connection, timeout: float) -> bool:
    """Wait, without a thread, until ``conn`` has data or end of file; False at the timeout."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = conn.fileno()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    try:
        loop.add_reader(fd, wake)
    except NotImplementedError:  # a loop without readers (Windows' proactor): poll on a thread
        return await asyncio.to_thread(conn.poll, timeout)
    try:
        await asyncio.wait_for(ready, timeout)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
    return True


class _Busy(Exception):
    pass


class _Gate:
    """At most ``capacity`` holders; at most ``max_waiting`` waiters, served in order. Safe across
    event loops (a library caller may run one asyncio.run after another on the same service)."""

    def __init__(self, capacity: int, max_waiting: int) -> None:
        self._lock = threading.Lock()
        self._free = capacity
        self._max_waiting = max_waiting
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def enter(self, timeout: float) -> None:
        """Hold a place; raises _Busy when the queue is full, TimeoutError after ``timeout``."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            if len(self._waiters) >= self._max_waiting:
                raise _Busy
            entry = (loop, loop.create_future())
            self._waiters.append(entry)
        try:
            await asyncio.wait_for(entry[1], timeout)
        except BaseException:
            with self._lock:
                queued = entry in self._waiters
                if queued:
                    self._waiters.remove(entry)
            if not queued and entry[1].done() and not entry[1].cancelled():
                self.leave()  # granted as this call gave up: hand the place on
            raise

    def leave(self) -> None:
        with self._lock:
            while self._waiters:
                loop, granted = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, granted)
                    return
                except RuntimeError:  # that loop is closed: its waiter is gone
                    continue
            self._free += 1

    def _grant(self, granted: asyncio.Future[None]) -> None:
        if granted.done():  # cancelled (timed out) before the grant arrived: pass it on
            self.leave()
        else:
            granted.set_result(None)


class ExtractionPool:
    """The extraction workers of one service, started on first use (or by :meth:`warm_up`)."""

    def __init__(self, limits: ExtractLimits) -> None:
        self.limits = limits
        self._gate = _Gate(limits.workers, limits.workers * WAITING_PER_WORKER)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._starting: Future[None] | None = None  # warm_up()'s worker, until it is idle
        self._closed = False  # by close(): no more workers started in the background
        weakref.finalize(self, _kill_all, self._idle, self._busy)

    def worker_pids(self) -> list[int]:
        """The process ids of the live workers, idle or busy."""
        with self._lock:
            return [pid for w in [*self._idle, *self._busy] if (pid := w.pid) is not None]

    @property
    def waiting(self) -> int:
        """Calls waiting for a free worker."""
        return self._gate.waiting

    # -- life ----------------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Start a worker in the background when none is idle and there is room for one (up to a
        second or two while the forkserver imports the extractor), so that the next page finds it
        ready; a page arriving first waits for it."""
        with self._lock:
            full = len(self._idle) + len(self._busy) >= self.limits.workers
            if self._closed or self._idle or full or self._starting is not None:
                return
            starting: Future[None] = Future()
            self._starting = starting
        starting.set_running_or_notify_cancel()

        def start() -> None:
            try:
                worker = _Worker(self.limits.memory_mb)
            except BaseException as exc:
                with self._lock:
                    self._starting = None
                starting.set_exception(exc)
                return
            with self._lock:
                self._starting = None
                closed = self._closed
                if not closed:
                    self._idle.append(worker)
            if closed:
                worker.kill()
            starting.set_result(None)

        threading.Thread(target=start, name="markfetch-warm-up", daemon=True).start()

    def close(self) -> None:
        """Kill every worker (a running extraction included) and start none in the background any
        more; a later call still starts one for itself."""
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
            self._busy.clear()
        for worker in workers:
            worker.kill()

    # -- one page ------------------------------------------------------------------------------
    async def extract(self, body: bytes, header_charset: str | None, url: str, max_bytes: int) -> Extracted:
        """Extract ``body`` in a worker under the limits; raises MarkfetchError (timeout,
        too_large, extraction_failed, or network_error for a bug), CancelledError when cancelled."""
        limits = self.limits
        try:
            await self._gate.enter(limits.seconds)
        except _Busy:
            raise MarkfetchError(
                ErrorCode.TIMEOUT,
                f"extracting {url} did not start: {self._gate.waiting} calls already wait for the "
                f"{limits.workers} extraction workers (MARKFETCH_EXTRACT_WORKERS); try again shortly",
            ) from None
        except TimeoutError:
            raise MarkfetchError(
                ErrorCode.TIMEOUT,
                f"extracting {url} did not start within {limits.seconds:g} s: the {limits.workers} "
                "extraction workers stayed busy (MARKFETCH_EXTRACT_WORKERS); try again shortly",
            ) from None
        try:
            return await self._extract(body, header_charset, url, max_bytes)
        finally:
            self._gate.leave()

    async def _extract(self, body: bytes, header_charset: str | None, url: str, max_bytes: int) -> Extracted:
        request = _frame({"charset": header_charset, "url": url, "max_bytes": max_bytes}, body)
        worker = await self._take()
        keep = False
        try:
            try:
                worker.conn.send_bytes(request)
            except OSError:  # it died while idle (killed from outside): one fresh worker, once
                self._drop(worker)
                worker = await self._take()
                worker.conn.send_bytes(request)
            started = time.monotonic()
            answered = await _readable(worker.conn, self.limits.seconds)
            message: bytes | None = None
            if answered:
                with contextlib.suppress(EOFError, OSError):
                    message = worker.conn.recv_bytes()
            if message is None:
                overrun = not answered or time.monotonic() - started >= self.limits.seconds
                raise self._failure(worker, url, overrun=overrun)
            header, data = _unframe(message)
            keep = header["status"] in ("ok", "error") and not header.get("retire")
            return _decoded(header, data, url, self.limits)
        finally:
            if keep:
                self._give_back(worker)
            else:
                self._drop(worker)

    def _failure(self, worker: _Worker, url: str, *, overrun: bool) -> MarkfetchError:
        if overrun:
            return MarkfetchError(
                ErrorCode.TIMEOUT,
                f"extracting {url} took longer than {self.limits.seconds:g} s "
                f"(MARKFETCH_EXTRACT_TIMEOUT_MS={self.limits.timeout_ms}); the page is too costly to "
                "convert: raise the limit, or pass raw=true (CLI: --raw) to get its source",
            )
        code = worker.exit_code()
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return MarkfetchError(
            ErrorCode.EXTRACTION_FAILED,
            f"{url}: the extraction process stopped ({how}), maybe out of memory "
            f"(MARKFETCH_EXTRACT_MEMORY_MB={self.limits.memory_mb}); the page could not be converted",
        )

    async def _take(self) -> _Worker:
        """An idle worker, warm_up()'s once it is ready, or a new one."""
        while True:
            with self._lock:
                if self._idle:
                    worker = self._idle.pop()
                    self._busy.add(worker)
                    return worker
                starting = self._starting
            if starting is None:
                break
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.wrap_future(starting))
            if starting.exception() is not None:
                break
        # Starting one waits for the forkserver (seconds while it imports the extractor): on a
        # thread. A call cancelled meanwhile leaves the new worker idle for the next.
        loop = asyncio.get_running_loop()
        new = loop.run_in_executor(None, _Worker, self.limits.memory_mb)
        try:
            worker = await asyncio.shield(new)
        except asyncio.CancelledError:
            new.add_done_callback(self._keep_started)
            raise
        with self._lock:
            self._busy.add(worker)
        return worker

    def _keep_started(self, new: asyncio.Future[_Worker]) -> None:
        if not new.cancelled() and new.exception() is None:
            worker = new.result()
            with self._lock:
                self._busy.add(worker)
            self._give_back(worker)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if worker in self._busy:
                self._busy.discard(worker)
                if len(self._idle) + len(self._busy) < self.limits.workers:
                    self._idle.append(worker)
                    return
        worker.kill()  # closed meanwhile, or one too many

    def _drop(self, worker: _Worker) -> None:
        """Kill a worker that overran, crashed, grew large or whose call was cancelled, and start
        its successor in the background, so that the next page does not wait for one."""
        with self._lock:
            self._busy.discard(worker)
        worker.kill()
        self.warm_up()


def _decoded(header: dict[str, Any], data: bytes, url: str, limits: ExtractLimits) -> Extracted:
    status = header["status"]
    if status == "ok":
        text = data.decode("utf-8", "surrogatepass")
        return Extracted(text, str(header["title"]), str(header["method"]), int(header["size"]))
    if status == "error":
        raise MarkfetchError(ErrorCode(header["code"]), str(header["message"]))
    if status == "memory":
        raise MarkfetchError(
            ErrorCode.TOO_LARGE,
            f"extracting {url} needed more than {limits.memory_mb:,} MB of memory "
            "(MARKFETCH_EXTRACT_MEMORY_MB); raise the limit, or pass raw=true (CLI: --raw) to get its source",
        )
    raise MarkfetchError(ErrorCode.NETWORK_ERROR, f"unexpected internal error ({header.get('type', status)})")


def _kill_all(*groups: Any) -> None:
    for group in groups:
        for worker in list(group):
            worker.kill()
