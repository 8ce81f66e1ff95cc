"""The loopback model stub in its own process, scripted for the runner benchmark.

    python -m tests.perf.stub_process --delay 0.1 --turns 4

Prints the OpenAI base URL on its first stdout line, then serves until stdin closes. Every Chat
Completions request is answered after ``delay`` seconds: while the conversation holds fewer than
``turns - 1`` tool results, with a ``read_file`` call on the document; then with ``submit_answer``.
Running in its own process, it does not share the harness's GIL.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    stub = LLMStub(responder(args.delay, args.turns))
    # A keep-alive reply must not wait for a delayed ACK (Nagle): that would add ~40 ms a call.
    stub.server._httpd.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]
    stub.server._httpd.socket.listen(256)  # 64 clients connect at once; the default backlog is 5
    with stub:
        print(stub.openai_base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
