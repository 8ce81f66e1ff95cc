"""Hostile SVGs against md-vision through a real MCP client over stdio: each costs one image (a
one-line note), never the server; a server killed with SIGKILL leaves no helper process behind.

On main 3d3dfe4 the first of these ended the server with SIGSEGV and the filter ones kept it
busy (``tools/list`` unanswered) for as long as resvg ran (issue 26, items 1 and 2).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from md_vision.errors import ImageRejected
from md_vision.imaging import SvgLimits, check_svg_filters, parse_svg, prepare_image
from md_vision.sandbox import RenderLimits, render_isolated
from tests.md_vision.test_hardening import _descendants
from tests.md_vision.test_mcp import _command, _stdio
from tests.support.stdio_process import INITIALIZE, INITIALIZED, can_track, pid_of, tracked

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">'
FILL = '<rect width="400" height="300" filter="url(#f)"/></svg>'

# name -> (SVG, what the note says). Refused by the pre-check, before any rendering.
REFUSED = {
    "nested": (HEAD + "<g>" * 300 + '<rect width="5" height="5"/>' + "</g>" * 300 + "</svg>", "deep"),
    "turbulence": (
        HEAD + '<filter id="f"><feTurbulence baseFrequency="0.05" numOctaves="1000000000"/></filter>' + FILL,
        "octaves",
    ),
    "morphology": (HEAD + '<filter id="f"><feMorphology radius="5000"/></filter>' + FILL, "radius 5000"),
    "convolve": (
        HEAD
        + f'<filter id="f"><feConvolveMatrix order="300" kernelMatrix="{" ".join(["1"] * 90_000)}"/></filter>'
        + FILL,
        "order 300",
    ),
    "rects": (HEAD + '<rect width="3" height="3"/>' * 200_000 + "</svg>", "elements"),
    "fewer-rects": (HEAD + '<rect width="3" height="3"/>' * 60_000 + "</svg>", "elements"),
    "text": (HEAD + '<text y="20">' + "abcd " * 400_000 + "</text></svg>", "characters of text"),
    "entities": (
        '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>',
        "entities",
    ),
}

# Within the pre-check's limits, yet resvg crashes (a chain of 300 <use>, each pointing at a group
# that holds the next) or runs long (ten octaves of noise on the full 1568 px canvas, with
# --svg-seconds 1): the render runs in a child process, which crashes or is killed.
USE_CHAIN = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><defs>'
    + "".join(f'<g id="g{i}"><use href="#g{i + 1}"/></g>' for i in range(300))
    + '<rect id="g300" width="5" height="5"/></defs><use href="#g0"/></svg>'
)
SLOW = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="1568" height="1568">'
    '<filter id="f"><feTurbulence baseFrequency="0.01" numOctaves="10"/>'
    '<feMorphology radius="10"/><feConvolveMatrix order="9"/></filter>'
    + '<rect width="1568" height="1568" filter="url(#f)"/>' * 4
    + "</svg>"
)
RENDERED = {"use-chain": (USE_CHAIN, "crashed"), "slow": (SLOW, "took longer than the 1 s limit")}


def _documents(folder: Path, cases: dict[str, tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(name, markdown file, expected words) for each SVG: one file referring to it on disk, one
    holding it as a data: URI (unless that line would be over 4 MB: a read's text holds at most
    5 MB, and 200,000 rectangles as a data: URI are 7.5 MB; 60,000 stand in for them)."""
    made = []
    for name, (svg, expected) in cases.items():
        (folder / f"{name}.svg").write_text(svg)
        (folder / f"{name}-file.md").write_text(f"# {name}\n\n![{name}]({name}.svg)\n\nafter\n")
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
        made.append((name, f"{name}-file.md", expected))
        if len(uri) < 4_000_000:
            (folder / f"{name}-data.md").write_text(f"# {name}\n\n![{name}]({uri})\n\nafter\n")
            made.append((name, f"{name}-data.md", expected))
    return made


def _answers_with_notes(tmp_path: Path, cases: dict[str, tuple[str, str]], *flags: str) -> None:
    documents = _documents(tmp_path, cases)
    params = _stdio("--allow-path", str(tmp_path), "--allow-domain", "none", "--workers", "1", *flags)

    async def go() -> list[tuple[str, str, str, str]]:
        rows = []
        async with Client(params) as client:
            for name, document, expected in documents:
                # max_tokens: the data: URI line alone is megabytes of text
                arguments = {"uri": str(tmp_path / document), "max_tokens": 10_000_000}
                result = await client.call_tool("read_md_with_images", arguments)
                text = "\n".join(block.text for block in result.content if block.type == "text")
                listed = await client.list_tools()  # the server is still there, and answers
                assert {tool.name for tool in listed.tools} == {"read_md_with_images", "index_md"}
                rows.append((name, document, expected, text))
        return rows

    for name, document, expected, text in asyncio.run(go()):
        notes = [line for line in text.splitlines() if line.startswith("[image not shown:")]
        assert len(notes) == 1 and expected in notes[0], (name, document, text[:600])
        assert "after" in text, (name, document)


def test_svgs_over_the_limits_are_refused_with_a_note_and_the_server_keeps_serving(tmp_path: Path) -> None:
    _answers_with_notes(tmp_path, REFUSED)


def test_a_render_that_crashes_or_overruns_costs_one_image(tmp_path: Path) -> None:
    _answers_with_notes(tmp_path, RENDERED, "--svg-seconds", "1")


def test_an_ordinary_svg_still_renders_through_the_child(tmp_path: Path) -> None:
    svg = HEAD + '<rect width="400" height="300" fill="#0000ff"/><text y="40">Label</text></svg>'
    (tmp_path / "ok.svg").write_text(svg)
    (tmp_path / "ok.md").write_text("# Ok\n\n![ok](ok.svg)\n")

    async def go() -> list[str]:
        async with Client(_stdio("--allow-path", str(tmp_path), "--allow-domain", "none")) as client:
            result = await client.call_tool("read_md_with_images", {"uri": str(tmp_path / "ok.md")})
            return [block.type for block in result.content]

    assert "image" in asyncio.run(go())


# -- the pre-check and the sandbox, directly -----------------------------------------------------


def test_the_precheck_stops_the_parse_at_the_first_limit() -> None:
    limits = SvgLimits(max_depth=3, max_elements=5, max_text_chars=4)
    with pytest.raises(ImageRejected, match="more than 3 deep"):
        parse_svg(HEAD + "<g><g><g></g></g></g></svg>", limits)
    assert parse_svg(HEAD + "<g><g></g></g></svg>", limits).tag == "{http://www.w3.org/2000/svg}svg"
    with pytest.raises(ImageRejected, match="more than 5 elements"):
        parse_svg(HEAD + "<rect/>" * 5 + "</svg>", limits)
    with pytest.raises(ImageRejected, match="more than 4 characters of text"):
        parse_svg(HEAD + "<text>ab<tspan>cde</tspan></text></svg>", limits)
    parse_svg(HEAD + "<desc>not drawn, not counted</desc><text>abcd</text></svg>", limits)
    with pytest.raises(ImageRejected, match="entities"):
        parse_svg('<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg>&x;</svg>', limits)
    # The usual doctype naming the SVG 1.1 DTD is read, never fetched; an entity it would define
    # stays unexpanded.
    doctype = (
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">'
    )
    assert parse_svg(doctype + "<svg><text>&x;</text></svg>", limits).find("text") is not None


@pytest.mark.parametrize(
    ("primitive", "passes", "fails"),
    [
        ("feTurbulence numOctaves", "10", "11"),
        ("feMorphology radius", "2 10", "2 10.5"),
        ("feConvolveMatrix order", "9", "10"),
    ],
)
def test_filter_parameters_have_limits(primitive: str, passes: str, fails: str) -> None:
    kind, attribute = primitive.split()
    for value, ok in ((passes, True), (fails, False)):
        root = parse_svg(HEAD + f'<filter id="f"><{kind} {attribute}="{value}"/></filter></svg>', SvgLimits())
        if ok:
            check_svg_filters(root, SvgLimits())
        else:
            with pytest.raises(ImageRejected, match=kind):
                check_svg_filters(root, SvgLimits())


def test_the_sandbox_survives_a_crash_a_freeze_and_a_memory_hog() -> None:
    crash = HEAD + "<g>" * 400 + "</g>" * 400 + "</svg>"
    with pytest.raises(ImageRejected, match="crashed"):
        render_isolated(crash, 400, 300)
    freeze = HEAD + '<filter id="f"><feTurbulence numOctaves="1000000000"/></filter>' + FILL
    with pytest.raises(ImageRejected, match=r"took longer than the 0\.5 s limit"):
        render_isolated(freeze, 400, 300, RenderLimits(seconds=0.5))
    hog = HEAD + '<rect width="3" height="3"/>' * 3_000_000 + "</svg>"
    with pytest.raises(ImageRejected, match="memory"):
        render_isolated(hog, 400, 300, RenderLimits(seconds=30, memory_bytes=200_000_000))
    png = prepare_image((HEAD + '<rect width="400" height="300" fill="#0f0"/></svg>').encode())
    assert (png.width, png.height, png.source_format) == (400, 300, "SVG")


# -- no orphans ------------------------------------------------------------------------------------


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], number: int) -> bytes:
    """The line answering request ``number`` (notifications before it are skipped)."""
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        assert line, "the server closed its output"
        if f'"id":{number}'.encode() in line:
            return line


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not can_track(), reason="walks /proc for the server's helper processes (Linux)")
@pytest.mark.parametrize(("workers", "helpers_expected"), [("2", 5), ("1", 3)])
def test_a_server_killed_mid_render_leaves_no_helper_process(
    tmp_path: Path, workers: str, helpers_expected: int
) -> None:
    """Folder workers (--workers 2, started by a folder of 40 files), the forkserver, the resource
    tracker and an SVG render in progress: SIGKILL the server, and every one of them is gone. With
    --workers 1 the forkserver and the tracker start at the render, from a worker thread."""
    folder = tmp_path / "many"
    folder.mkdir()
    for number in range(40):
        (folder / f"doc{number:02d}.md").write_text(f"# Doc {number}\n\ntext\n")
    (tmp_path / "slow.svg").write_text(SLOW)
    (tmp_path / "slow.md").write_text("# Slow\n\n![slow](slow.svg)\n")
    process = subprocess.Popen(
        [*_command(), "--allow-path", str(tmp_path), "--allow-domain", "none", "--workers", workers],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert process.stdout is not None
    helpers: list[int] = []
    try:
        _send(
            process,
            INITIALIZE,
        )
        _answer(process, 1)
        _send(process, INITIALIZED)
        call = {"name": "index_md", "arguments": {"uri": str(folder), "max_tokens": 100_000}}
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        _answer(process, 2)
        read = {"name": "read_md_with_images", "arguments": {"uri": str(tmp_path / "slow.md")}}
        _send(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": read})
        # forkserver, resource tracker, two workers and the render: wait until they all run
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            helpers = _descendants(process.pid)
            if len(helpers) >= helpers_expected:
                break
            time.sleep(0.05)
        assert len(helpers) >= helpers_expected, helpers
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in helpers):
            time.sleep(0.1)
        left = [pid for pid in helpers if _alive(pid)]
    finally:
        if process.poll() is None:
            process.kill()
        for pid in helpers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert left == [], f"helper processes outlived the server: {left}"


def _parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


@pytest.mark.skipif(not can_track(), reason="walks /proc for the render process (Linux)")
def test_cancelling_a_read_kills_its_render(tmp_path: Path) -> None:
    """A read whose SVG would render for up to 60 s (--svg-seconds 60) is cancelled by its client
    once the render runs: the render process goes at once, not at its deadline, and the server
    answers the next request."""
    (tmp_path / "slow.svg").write_text(SLOW)
    (tmp_path / "slow.md").write_text("# Slow\n\n![slow](slow.svg)\n")
    pidfile = tmp_path / "pid"
    args = ("--allow-path", str(tmp_path), "--allow-domain", "none", "--workers", "1", "--svg-seconds", "60")
    params = tracked(_stdio(*args), pidfile)

    async def go() -> tuple[list[int], list[int], list[str]]:
        async with Client(params) as client:
            server = pid_of(pidfile)

            def renders() -> list[int]:  # grandchildren: the forkserver's children
                return [pid for pid in _descendants(server) if _parent_of(pid) not in (server, -1)]

            running: list[int] = []
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "read_md_with_images", {"uri": str(tmp_path / "slow.md")})
                with anyio.move_on_after(30):
                    while not running:
                        await anyio.sleep(0.05)
                        running = renders()
                group.cancel_scope.cancel()  # the client sends notifications/cancelled
            left = running
            with anyio.move_on_after(10):  # far less than the render's 60 s
                while left:
                    await anyio.sleep(0.05)
                    left = [pid for pid in running if _alive(pid)]
            listed = await client.list_tools()
            return running, left, [tool.name for tool in listed.tools]

    running, left, tools = asyncio.run(go())
    assert running, "the render never started"
    assert left == [], f"the render outlived the cancelled call: {left}"
    assert "read_md_with_images" in tools
