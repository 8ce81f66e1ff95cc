"""Headless Chromium driven over the Chrome DevTools Protocol, with no dependency but the browser.

The browser is started with ``--remote-debugging-pipe``: it reads commands from file descriptor 3
and writes replies and events to descriptor 4, as NUL-terminated JSON. No port is opened, so
nothing races for one and nothing else on the machine can connect. Every browser gets a fresh
profile in a temporary folder, background networking off, and no first-run screens.

    with Chromium.launch(find_chromium()) as browser:
        page = browser.new_page()
        page.navigate("file:///.../index.html")
        assert page.evaluate("document.title") == "..."
        png = page.screenshot()
        assert not page.errors()

Waits are CDP events or polls of a condition under one deadline, never fixed sleeps.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TRAMPOLINE = """
import fcntl, os, sys
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for fd in sys.argv[1:3]:
    os.close(int(fd))
for number, fd in zip((3, 4), ends):
    os.dup2(fd, number)
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
ENV_OVERRIDE = "DOCAB_CHROMIUM"


def find_chromium() -> str | None:
    """The browser binary: ``$DOCAB_CHROMIUM`` when set, else the first of ``CANDIDATES`` on PATH."""
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        found = shutil.which(override)
        return found or (override if os.access(override, os.X_OK) and os.path.isfile(override) else None)
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


class CDPError(Exception):
    pass


@dataclass
class Page:
    browser: Chromium
    session: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def send(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 15.0) -> Any:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def navigate(self, url: str, *, timeout: float = 15.0) -> None:
        """Open ``url`` and wait for its load event (none comes when only the fragment changes)."""
        self.browser.drain()
        loaded = len([e for e in self.events if e["method"] == "Page.loadEventFired"])
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CDPError(f"navigation to {url} failed: {result['errorText']}")
        if "loaderId" not in result:
            return  # a same-document navigation (only the #fragment changed): no load event comes
        self.wait_for_event("Page.loadEventFired", after=loaded, timeout=timeout)

    def wait_for_event(self, method: str, *, after: int = 0, timeout: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            matching = [e for e in self.events if e["method"] == method]
            if len(matching) > after:
                return matching[after]
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"no {method} within {timeout} s")
            self.browser.pump(min(left, 0.5))

    def evaluate(self, expression: str, *, timeout: float = 15.0) -> Any:
        """The value of a JavaScript expression (promises awaited); a thrown error raises CDPError."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CDPError(f"{expression!r} threw: {text}")
        return result["result"].get("value")

    def wait_until(self, expression: str, *, timeout: float = 15.0, interval: float = 0.05) -> Any:
        """Poll ``expression`` until it is truthy; returns its value or raises after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() >= deadline:
                raise CDPError(f"{expression!r} was still {value!r} after {timeout} s")
            self.browser.pump(interval)

    def screenshot(self, *, full_page: bool = False) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            metrics = self.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", params)["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        self.browser.drain()
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(
                    "uncaught: " + str(details.get("exception", {}).get("description") or details.get("text"))
                )
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(
                    "console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(
                    f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip()
                )
        return found


class Chromium:
    def __init__(
        self, process: subprocess.Popen[bytes], writer: Any, reader: Any, profile: Path, size: tuple[int, int]
    ) -> None:
        self.process = process
        self.size = size
        self._writer = writer
        self._incoming: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._replies: dict[int, dict[str, Any]] = {}
        self._pages: dict[str, Page] = {}
        self._next_id = 0
        self._profile = profile
        self._thread = threading.Thread(target=self._read, args=(reader,), daemon=True)
        self._thread.start()

    @classmethod
    def launch(cls, binary: str, *, width: int = 1400, height: int = 1000) -> Chromium:
        profile = Path(tempfile.mkdtemp(prefix="docab-chromium-"))
        command_r, command_w = os.pipe()
        reply_r, reply_w = os.pipe()
        args = [
            binary,
            "--headless",
            "--disable-background-networking",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-sync",
            "--disable-component-update",
            "--disable-default-apps",
            "--mute-audio",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
        # The pipe must be descriptors 3 and 4 in the browser. A tiny Python trampoline puts it there
        # (a shell cannot name descriptors above 9, and preexec_fn is unsafe with threads).
        process = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(command_r), str(reply_w), *args, "about:blank"],
            pass_fds=(command_r, reply_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(command_r)
        os.close(reply_w)
        return cls(
            process,
            os.fdopen(command_w, "wb", buffering=0),
            os.fdopen(reply_r, "rb"),
            profile,
            (width, height),
        )

    # -- the wire --------------------------------------------------------------------------------
    def _read(self, reader: Any) -> None:
        buffer = b""
        while chunk := reader.read1(1 << 16):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for message in messages:
                self._incoming.put(json.loads(message))
        self._incoming.put(None)  # the browser closed the pipe

    def _dispatch(self, message: dict[str, Any] | None) -> None:
        if message is None:
            raise CDPError(f"the browser exited (status {self.process.poll()})")
        if "id" in message:
            self._replies[message["id"]] = message
        elif message.get("sessionId") in self._pages:
            self._pages[message["sessionId"]].events.append(message)

    def pump(self, timeout: float) -> None:
        """Handle what arrives within ``timeout`` seconds (at least one message, if any comes)."""
        try:
            self._dispatch(self._incoming.get(timeout=timeout))
        except queue.Empty:
            return
        self.drain()

    def drain(self) -> None:
        while True:
            try:
                self._dispatch(self._incoming.get_nowait())
            except queue.Empty:
                return

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = 15.0,
    ) -> Any:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._writer.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while ident not in self._replies:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"no reply to {method} within {timeout} s")
            self.pump(left)
        reply = self._replies.pop(ident)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    # -- pages -----------------------------------------------------------------------------------
    def new_page(self) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self._pages[session] = page
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        # A fixed viewport, so screenshots have the same size on every machine.
        width, height = self.size
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close", timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._writer.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
