"""The loopback model stub in its own process, scripted for the runner benchmark.

    python -m tests.perf.stub_process --delay 0.1 --turns 4

Prints the OpenAI base URL on its first stdout line, then serves until stdin closes. Every Chat
Completions request is answered after ``delay`` seconds: while the conversation holds fewer than
``turns - 1`` tool results, with a ``read_file`` call on the document; then with ``submit_answer``.
Running in its own process, it does not share the harness's GIL.

Two servers give the same replies (``tests.support.llm_stub``'s wire format): ``--server asyncio``
(the default: one event loop, so 64 waiting requests cost nothing) and ``--server threads`` (the
test suite's ``LLMStub``, a thread per connection, whose GIL contention adds latency at 64 in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tests.support.http_server import Reply, Request
from tests.support.llm_stub import LLMStub, openai_reply


def responder(delay: float, turns: int):  # type: ignore[no-untyped-def]
    def answer(protocol: str, request: Request) -> Reply:
        body = request.json()
        done = sum(1 for m in body.get("messages", ()) if m.get("role") == "tool")
        if done < turns - 1:
            args = json.dumps({"path": "document/document.md", "offset": 1 + 10 * done, "limit": 20})
            return openai_reply(
                None,
                tool_calls=[(f"call_{done}", "read_file", args)],
                prompt_tokens=500 + 200 * done,
                delay=delay,
            )
        args = json.dumps({"status": "answered", "answer": "1998"})
        return openai_reply(
            None, tool_calls=[(f"call_{done}", "submit_answer", args)], prompt_tokens=1200, delay=delay
        )

    return answer


async def serve_asyncio(answer, delay: float) -> None:  # type: ignore[no-untyped-def]
    """Keep-alive HTTP/1.1 on one event loop: read a request, wait ``delay``, write the reply."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                reply = answer("openai", Request(method, path, {}, headers, body))
                await asyncio.sleep(delay)
                payload = reply.body if isinstance(reply.body, bytes) else str(reply.body).encode()
                head = (
                    f"HTTP/1.1 {reply.status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\n\r\n"
                )
                writer.write(head.encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the client went away, or the server is shutting down
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=256)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--server", choices=("asyncio", "threads"), default="asyncio")
    args = parser.parse_args()
    if args.server == "asyncio":
        # The reply carries no delay of its own: the server waits, without a thread per request.
        asyncio.run(serve_asyncio(responder(0.0, args.turns), args.delay))
        return
    stub = LLMStub(responder(args.delay, args.turns))
    # A keep-alive reply must not wait for a delayed ACK (Nagle): that would add ~40 ms a call.
    stub.server._httpd.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]
    stub.server._httpd.socket.listen(256)  # 64 clients connect at once; the default backlog is 5
    with stub:
        print(stub.openai_base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
