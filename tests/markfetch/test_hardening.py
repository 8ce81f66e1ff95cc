"""markfetch under attack: decompression bombs over stdio, savePath races, overwrite, odd inputs."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.markfetch.conftest import site_url
from tests.markfetch.pages import page
from tests.markfetch.test_mcp import HTML, calls, console_script, in_process, stdio_env
from tests.support.bombs import bomb
from tests.support.http_server import LocalServer, Reply
from tests.support.stdio_process import can_track, peak_rss_mb, pid_of, stops_quietly, tracked
from tests.support.swapper import FolderSwapper

BOMBS = ["gzip", "deflate", "br", "zstd", ("gzip", "gzip"), ("br", "zstd"), ("zstd", "deflate")]
SAVED = re.compile(r"^Saved (\d+) bytes to (.+)$")


@pytest.mark.skipif(not can_track(), reason="reads the server's peak memory from /proc (Linux)")
def test_bombs_end_in_too_large_quickly_small_and_without_stalling_the_server(tmp_path: Path) -> None:
    with LocalServer() as server:
        for number, codings in enumerate(BOMBS):
            body, header = bomb(codings if isinstance(codings, str) else tuple(codings))
            server.route(
                f"/bomb{number}", Reply(body=body, headers={"Content-Encoding": header}, content_type=HTML)
            )
        three, header = bomb(("gzip", "gzip", "gzip"), 1 << 20)
        server.route("/three", Reply(body=three, headers={"Content-Encoding": header}, content_type=HTML))
        server.route("/page", Reply(body=page("article"), content_type=HTML))
        pidfile = tmp_path / "pid"
        # A 30 s budget: only the byte cap (5 MB, the default) can end a bomb quickly.
        env = stdio_env(tmp_path, MARKFETCH_ALLOW_HOSTS="127.0.0.1", MARKFETCH_TIMEOUT_MS="30000")
        params = tracked(StdioServerParameters(command=console_script(), args=[], env=env), pidfile)

        async def timed(client: Client, url: str) -> tuple[str, float]:
            started = time.monotonic()
            result = await client.call_tool("fetch_markdown", {"url": url})
            return result.content[0].text, time.monotonic() - started

        async def go() -> tuple[list[tuple[str, float, str]], tuple[str, float], float]:
            rows = []
            async with Client(params) as client:
                await timed(client, server.url("/page"))  # first call: extraction finishes loading
                for number in range(len(BOMBS)):
                    # A bomb and an ordinary page at the same time, on the same server.
                    (text, elapsed), (other, _) = await asyncio.gather(
                        timed(client, server.url(f"/bomb{number}")), timed(client, server.url("/page"))
                    )
                    rows.append((text, elapsed, other))
                refused = await timed(client, server.url("/three"))
                return rows, refused, peak_rss_mb(pid_of(pidfile))

        rows, (refused, refused_s), peak_mb = asyncio.run(go())
    for (text, seconds, other), codings in zip(rows, BOMBS, strict=True):
        assert text.startswith("[too_large] ") and "5,000,000 bytes" in text, (codings, text)
        assert seconds < 2.0, (codings, seconds)
        assert other.startswith("# How tide pools survive the summer"), codings  # the concurrent call
    assert refused.startswith("[network_error] ") and "at most 2 stacked content codings" in refused
    assert refused_s < 2.0
    assert peak_mb < 300, f"the server peaked at {peak_mb:.0f} MB resident"


# -- savePath ---------------------------------------------------------------------------------


@pytest.fixture
def site():
    with LocalServer() as server:
        server.route("/a", Reply(body=page("article"), content_type=HTML))
        server.route("/text", Reply(body="inside text\n", content_type="text/plain"))
        yield server


def test_an_existing_file_is_kept_unless_overwrite_is_true(
    site: LocalServer, settings, tmp_path: Path
) -> None:
    target = tmp_path / "doc.md"
    target.write_text("mine")
    app, _ = in_process(settings, [tmp_path])
    url = site_url(site, "/a")
    kept, replaced = calls(
        app, {"url": url, "savePath": str(target)}, {"url": url, "savePath": str(target), "overwrite": True}
    )
    assert kept.is_error is True
    assert kept.content[0].text == (
        f"[save_failed] cannot write {target}: it already exists; pass overwrite: true to replace it"
    )
    assert len(site.requests) == 1  # refused before fetching
    assert replaced.is_error is False
    match = SAVED.match(replaced.content[0].text)
    assert match is not None, replaced.content[0].text  # the reference's contract: ^Saved (\d+) bytes
    assert int(match.group(1)) == target.stat().st_size > 1000 and match.group(2) == str(target)
    assert target.read_text().startswith("# How tide pools survive the summer")


def test_odd_save_paths_get_one_line_save_errors(site: LocalServer, settings, tmp_path: Path) -> None:
    app, _ = in_process(settings, [tmp_path])
    url = site_url(site, "/a")
    (tmp_path / "folder").mkdir()
    (tmp_path / "inside.md").write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "inside.md")
    long_name, long_folder, folder, link = calls(
        app,
        {"url": url, "savePath": str(tmp_path / ("n" * 300 + ".md"))},
        {"url": url, "savePath": str(tmp_path / ("d" * 300) / "a.md")},
        {"url": url, "savePath": str(tmp_path / "folder"), "overwrite": True},
        {"url": url, "savePath": str(tmp_path / "link.md"), "overwrite": True},
    )
    assert long_name.content[0].text.startswith("[save_failed] ")
    assert long_name.content[0].text.endswith(": the name is too long")
    assert long_folder.content[0].text.startswith("[save_failed] ")
    assert long_folder.content[0].text.endswith(": the name is too long")
    assert folder.content[0].text.startswith("[save_failed] ") and folder.content[0].text.endswith(
        "it is a folder"
    )
    assert (
        link.content[0].text.startswith("[save_forbidden] ") and "is a symbolic link" in link.content[0].text
    )
    assert site.requests == []


def test_a_redirect_to_a_data_url_is_a_network_error_not_an_internal_one(
    site: LocalServer, settings, tmp_path: Path
) -> None:
    site.route("/to-data", Reply.redirect("data:text/html,<h1>hi</h1>"))
    app, _ = in_process(settings, [tmp_path])
    (result,) = calls(app, {"url": site_url(site, "/to-data")})
    assert result.is_error is True
    assert result.content[0].text.startswith(
        f"[network_error] redirect from {site_url(site, '/to-data')} blocked:"
    )
    assert "internal error" not in result.content[0].text


def save_race(site: LocalServer, settings, tmp_path: Path, count: int) -> None:
    """Save ``count`` times into root/sub while sub keeps turning into a link to outside."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    app, _ = in_process(settings, [root])
    url = site_url(site, "/text")
    arguments = [
        {"url": url, "savePath": str(root / "sub" / f"out{n}.md"), "raw": True, "overwrite": True}
        for n in range(count)
    ]
    with FolderSwapper(root / "sub", outside) as swapper:
        results = calls(app, *arguments)
    texts = [result.content[0].text for result in results]
    saved = [text for text in texts if text.startswith("Saved ")]
    refused = [text for text in texts if text.startswith("[save_forbidden] ")]
    assert list(outside.iterdir()) == [], "a file was written outside the write roots"
    assert len(saved) + len(refused) + sum(t.startswith("[save_failed] ") for t in texts) == count, texts
    assert saved and swapper.swaps > 10
    for path in (root / "sub").iterdir():
        assert path.read_text() == "inside text\n"


def test_a_folder_swapped_for_a_link_during_2000_saves_never_writes_outside(site, settings, tmp_path) -> None:
    save_race(site, settings, tmp_path, 2000)


def test_the_server_stops_quietly_on_sigterm(tmp_path: Path) -> None:
    # The mechanism is shared (docab_mcpguard.run_until_stopped); md-vision's tests take every way.
    assert stops_quietly([console_script()], "sigterm", env=stdio_env(tmp_path))
