"""A scriptable HTTP/1.1 server on 127.0.0.1 for tests: routes, redirects, delays, chunked bodies.

It speaks the real wire protocol (a ``ThreadingHTTPServer`` in a background thread), so the code
under test runs its real HTTP stack. Each route maps a path to a :class:`Reply` or to a callable
``(Request) -> Reply``; every request is recorded in ``server.requests``.

    with LocalServer({"/a": Reply(body=b"hi")}) as server:
        httpx.get(server.url("/a"))
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # keys lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    """What the server sends back.

    ``body`` may be bytes, str, or an iterable of byte chunks (sent with chunked encoding, with
    ``chunk_delay`` seconds between chunks). ``delay`` waits before the status line.
    ``gzip_body`` compresses a bytes body and sets Content-Encoding. ``content_length`` overrides
    the header (for lying servers); ``close_early`` drops the connection after half the body.
    """

    status: int = 200
    body: bytes | str | Iterable[bytes] = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = "text/plain; charset=utf-8"
    delay: float = 0.0
    chunk_delay: float = 0.0
    gzip_body: bool = False
    content_length: int | None = None
    close_early: bool = False

    @classmethod
    def json(cls, data: Any, status: int = 200, **kwargs: Any) -> Reply:
        return cls(status=status, body=json.dumps(data).encode(), content_type="application/json", **kwargs)

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Reply:
        return cls(status=status, headers={"Location": location}, content_type=None)


Handler = Reply | Callable[[Request], Reply]


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-request (timeouts, size caps) are expected here, not errors to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LocalServer:
    def __init__(
        self, routes: Mapping[str, Handler] | None = None, *, default: Handler | None = None, port: int = 0
    ):
        """``port`` 0 picks a free port; a given one lets a test bring a stopped server back."""
        self.routes: dict[str, Handler] = dict(routes or {})
        self.default = default
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="LocalServer", daemon=True
        )

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def route(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    def _dispatch(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        handler = self.routes.get(request.path, self.default)
        if handler is None:
            return Reply(status=404, body=b"not found")
        return handler(request) if callable(handler) else handler

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; with Nagle's algorithm the body waits for
            # the client's delayed ACK (~40 ms on Linux) on every keep-alive response.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # silence stderr
                return

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._dispatch(request)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                if isinstance(body, str):
                    body = body.encode("utf-8")
                self.send_response(reply.status)
                if reply.content_type:
                    self.send_header("Content-Type", reply.content_type)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if isinstance(body, bytes | bytearray):
                    if reply.gzip_body:
                        body = gzip.compress(bytes(body))
                        self.send_header("Content-Encoding", "gzip")
                    length = reply.content_length if reply.content_length is not None else len(body)
                    self.send_header("Content-Length", str(length))
                    self.end_headers()
                    if reply.close_early:
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    self.wfile.write(body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in body:
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    if not chunk:
                        continue
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        return _Handler
