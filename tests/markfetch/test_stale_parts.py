"""A savePath write killed mid-write leaves its hidden ``.part`` file; the next save into that
folder removes it once stale, and nothing else (issue 26 item 4: 6.3 MB of a 30 MB document
stayed for good).

The writer is a real process running the same write (``docab_mcpguard.write_file_in``) that the
kernel kills mid-write: a 6 MB file-size limit (``RLIMIT_FSIZE``) with SIGXFSZ at its default
action ends it at the sixth megabyte of 30, as deterministically as a SIGKILL cannot be timed.
The next save goes through markfetch's MCP server over stdio.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from docab_mcpguard.beneath import STALE_PART_S, remove_stale_parts
from tests.markfetch.pages import page
from tests.markfetch.test_mcp import HTML, console_script, stdio_env
from tests.support.http_server import LocalServer, Reply

WRITER = textwrap.dedent(
    """
    import os, resource, signal, sys
    from docab_mcpguard import write_file_in
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the kernel's kill applies
    resource.setrlimit(resource.RLIMIT_FSIZE, (6_000_000, 6_000_000))
    folder = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
    write_file_in(folder, "big.md", b"# Big\\n" + b"x" * 30_000_000, replace=False)
    """
)
LEFTOVER = re.compile(r"\.big\.md\.[0-9a-f]{8}\.part")


def _killed_writer(folder: Path) -> Path:
    """Run the writer into ``folder`` until the kernel kills it; the leftover it left."""
    before = set(folder.iterdir())
    done = subprocess.run([sys.executable, "-c", WRITER, str(folder)], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGXFSZ, (done.returncode, done.stderr[-500:])
    leftovers = [path for path in set(folder.iterdir()) - before if LEFTOVER.fullmatch(path.name)]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size == 6_000_000, leftovers
    assert not (folder / "big.md").exists()
    return leftovers[0]


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past), follow_symlinks=False)


def test_the_next_save_removes_what_a_killed_write_left(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    leftover = _killed_writer(folder)
    fresh = _killed_writer(folder)  # a write that may still be going on: too recent to touch
    assert leftover.exists()  # the second write kept the first one's file: it is recent
    _age(leftover, STALE_PART_S + 60)  # as if the next save came eleven minutes later
    # Look-alikes that are not leftovers of this code: kept whatever their age.
    decoys = {
        "notes.part": "mine",
        ".big.md.part": "no random part",
        ".big.md.0123456g.part": "not hex",
        ".big.md.0123456789.part": "ten digits",
        ".big.md.01234567.part.bak": "another suffix",
    }
    for name, text in decoys.items():
        (folder / name).write_text(text)
        os.chmod(folder / name, 0o600)
        _age(folder / name, STALE_PART_S * 10)
    shared = folder / ".doc.md.89abcdef.part"  # the pattern, but readable by others: not ours
    shared.write_text("shared")
    os.chmod(shared, 0o644)
    _age(shared, STALE_PART_S * 10)
    link = folder / ".doc.md.01234567.part"
    link.symlink_to(tmp_path / "elsewhere")
    linked_folder = folder / ".doc.md.76543210.part"
    linked_folder.mkdir()

    with LocalServer() as site:
        site.route("/a", Reply(body=page("article"), content_type=HTML))
        params = StdioServerParameters(
            command=console_script(),
            args=[],
            env=stdio_env(tmp_path, MARKFETCH_ALLOW_HOSTS="127.0.0.1", MARKFETCH_ALLOW_PATHS=str(folder)),
        )

        async def save() -> str:
            async with Client(params) as client:
                result = await client.call_tool(
                    "fetch_markdown", {"url": site.url("/a"), "savePath": str(folder / "a.md")}
                )
                return result.content[0].text

        answer = asyncio.run(save())
    assert answer.startswith("Saved "), answer
    assert not leftover.exists(), "the stale leftover of the killed write is still there"
    assert fresh.exists(), "a recent temporary file (a write that may be running) was removed"
    assert all((folder / name).read_text() == text for name, text in decoys.items())
    assert shared.exists() and link.is_symlink() and linked_folder.is_dir()
    assert (folder / "a.md").read_text().startswith("# How tide pools")


def test_removal_is_by_age_through_the_folder_held(tmp_path: Path) -> None:
    (tmp_path / ".x.md.0badcafe.part").write_text("partial")
    os.chmod(tmp_path / ".x.md.0badcafe.part", 0o600)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        now = time.time()
        assert remove_stale_parts(folder, now=now) == 0  # just written
        assert remove_stale_parts(folder, now=now + STALE_PART_S + 1) == 1
    finally:
        os.close(folder)
    assert list(tmp_path.iterdir()) == []
