"""md-vision: what structured output costs on a large index (issue 26 item 8), over MCP stdio.

    uv run python -m tests.perf.md_vision_structured              # 1,000 files, 3 runs each
    uv run python -m tests.perf.md_vision_structured --files 200 --repeat 1

Generates a folder of markdown files (the main benchmark's: frontmatter, a title and 36 section
headings each, about 20,000 characters) and asks a real MCP client for the folder's whole index in
one result (max_tokens large enough), on a server started with structured output and on one
started with ``--no-structured-output``. Each server gets one warm-up call first (parses and
caches the folder, and builds the client's schema validator), so the timed calls measure what
structured output adds: the server building and sending ``structuredContent``, the client
decoding it and validating it against the tool's output schema. The client-side validation is
also timed alone (the SDK's own validator, compiled once, as ``call_tool`` uses it) on the
structured content of the last call. Prints the figures and the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.perf.md_vision_bench import _with_server, generate_folder


async def _calls(root: Path, extra: list[str], repeat: int) -> tuple[list[float], int, dict[str, Any] | None]:
    async def body(client: Any) -> tuple[list[float], int, dict[str, Any] | None]:
        arguments = {"uri": str(root), "max_tokens": 1_000_000}
        first = await client.call_tool("index_md", arguments)  # parse, cache, compile the validator
        assert not first.is_error, first.content[0].text[:300]
        times = []
        result = first
        for _ in range(repeat):
            started = time.perf_counter()
            result = await client.call_tool("index_md", arguments)
            times.append(time.perf_counter() - started)
        assert result.next_cursor is None if hasattr(result, "next_cursor") else True
        text = result.content[0].text
        assert "next_cursor" not in text.lower() or "Note:" not in text[:200], text[:300]
        return times, len(text), result.structured_content

    return await _with_server(root, extra, body)  # type: ignore[no-any-return]


async def _validation_s(root: Path, content: dict[str, Any], repeat: int) -> float:
    async def body(client: Any) -> float:
        tools = await client.list_tools()
        schema = next(tool.output_schema for tool in tools.tools if tool.name == "index_md")
        from jsonschema import exceptions
        from jsonschema.validators import validator_for

        validator = validator_for(schema)(schema)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            assert exceptions.best_match(validator.iter_errors(content)) is None
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    return await _with_server(root, [], body)  # type: ignore[no-any-return]


def _rows(headings: Any) -> int:
    """Heading rows of one file's structured entry, whatever its shape (rows or columns)."""
    if isinstance(headings, dict):
        return len(next(iter(headings.values()), []))
    return len(headings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "docs"
        size = generate_folder(root, args.files)
        print(f"{args.files} files, {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.2f}")
        rows = {}
        for label, extra in (
            ("structured output on", []),
            ("structured output off", ["--no-structured-output"]),
        ):
            times, chars, content = asyncio.run(_calls(root, extra, args.repeat))
            rows[label] = (times, chars, content)
            print(
                f"{label:22} whole index: median {statistics.median(times):.2f} s "
                f"(runs {', '.join(f'{t:.2f}' for t in times)}); text {chars:,} characters"
            )
        content = rows["structured output on"][2]
        assert content is not None
        import json

        encoded = len(json.dumps(content, ensure_ascii=False))
        headings = sum(_rows(file.get("headings", [])) for file in content["files"])
        validation = asyncio.run(_validation_s(root, content, args.repeat))
        print(
            f"structuredContent: {encoded:,} characters of JSON, {headings:,} headings; client-side "
            f"schema validation alone: {validation:.3f} s"
        )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
