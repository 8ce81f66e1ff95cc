"""The folder parsers: worker processes that parse a large folder's files (:mod:`md_vision.folder`),
started once (at start-up by :meth:`ParserPool.warm_up`, or on first use), replaced when a worker
dies, stopped for good by :meth:`ParserPool.close`."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import Executor, Future

from md_vision.folder import POOL_THRESHOLD, parser_pool
from md_vision.folder import warm_up as start_workers


class ParserPool:
    """The worker processes for large folders; ``workers`` of them (1 or fewer: none, parse here)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._parsers: Executor | None = None  # made by warm_up() or on first use
        self._warming: Future[None] | None = None  # set by expect_warm_up(): done once a worker answered
        self._parsers_lock = threading.Lock()
        self._closed = False  # close() was called: no new pool

    def for_files(self, files: int) -> Executor | None:
        """The worker processes for parsing ``files`` files, or None to parse them here: when they
        are few, or while the workers the server started at start-up are still starting (a page of
        an index parses at most a few hundred files, quicker here than waiting for them)."""
        if files < POOL_THRESHOLD:
            return None
        if self._warming is not None and not self._warming.done():
            return None
        return self.get()

    def get(self) -> Executor | None:
        workers = self._workers
        if workers <= 1:
            return None
        with self._parsers_lock:  # warm_up() runs on its own thread; two pools would leak one
            if self._closed:
                return None
            if self._parsers is None:
                self._parsers = parser_pool(workers)
            return self._parsers

    def discard(self, broken: Executor | None) -> None:
        """Drop a pool whose worker died, so that the next large folder gets a new one."""
        with self._parsers_lock:
            if broken is not None and self._parsers is broken:
                self._parsers = None
        if broken is not None:
            broken.shutdown(wait=False, cancel_futures=True)

    def expect_warm_up(self) -> None:
        """Say that warm_up() is about to run: until a worker answers, a large folder's page is
        parsed here instead of waiting for the workers. The server calls this before it starts
        warm_up()'s thread, so that a call arriving first cannot pick the pool while it starts
        (starting it blocks until the forkserver has imported the parser: seconds on a busy
        machine, against a few hundred milliseconds to parse a page here)."""
        with self._parsers_lock:
            if self._warming is None:
                self._warming = Future()

    def warm_up(self) -> None:
        """Start the folder parsers (the server calls this on a thread of its own at start-up)."""
        self.expect_warm_up()
        warming = self._warming
        assert warming is not None

        def settle(_: object = None) -> None:
            if not warming.done():
                warming.set_result(None)

        pool = self.get()
        if pool is None:
            settle()
            return
        try:
            start_workers(pool)
            pool.submit(int).add_done_callback(settle)  # a worker answered (or the pool broke)
        except RuntimeError:  # the server began to stop (close_parsers) while the pool started
            settle()

    def close(self, *, wait: bool) -> None:
        """Stop the folder parsers for good; ``wait``: until their processes have exited (a
        process still starting when the server exits would print a traceback)."""
        with self._parsers_lock:
            self._closed = True
            pool, self._parsers = self._parsers, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)
            # Its queues' semaphores are released when they are collected: now, not at an exit
            # that may skip it (a signal ends the server with os._exit, and the resource tracker
            # would then warn about "leaked semaphores").
            del pool
            gc.collect()
