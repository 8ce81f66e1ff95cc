"""The CLI as a user runs it: a subprocess of the console script, stdout, stderr and exit status."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.markfetch.pages import page
from tests.markfetch.test_mcp import console_script
from tests.support.http_server import LocalServer, Reply

HTML = "text/html; charset=utf-8"


def markfetch(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "MARKFETCH_ALLOW_HOSTS": "127.0.0.1",
        **env,
    }
    return subprocess.run(
        [console_script(), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def site():
    with LocalServer() as server:
        server.route("/a", Reply(body=page("article"), content_type=HTML))
        server.route("/api", Reply.json({"ok": True}))
        server.route("/gone", Reply(status=404, body="no"))
        server.route("/jump", Reply.redirect(f"http://localhost:{server.port}/a"))
        yield server


def test_document_on_stdout_and_nothing_else(site: LocalServer, tmp_path: Path) -> None:
    done = markfetch(site.url("/a"), cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("# How tide pools survive the summer\n\n") and done.stdout.endswith("\n")
    assert done.stderr == ""


def test_output_file_relative_to_the_working_folder(site: LocalServer, tmp_path: Path) -> None:
    done = markfetch(
        site.url("/a"), "-o", "out/page.md", cwd=tmp_path, MARKFETCH_ALLOWED_WRITE_ROOTS="/nonexistent"
    )
    assert done.returncode == 1 and done.stderr.startswith("[save_failed] ")  # out/ does not exist
    (tmp_path / "out").mkdir()
    done = markfetch(site.url("/a"), "-o", "out/page.md", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("Saved ") and str(tmp_path / "out" / "page.md") in done.stderr
    assert (tmp_path / "out" / "page.md").read_text().startswith("# How tide pools")


def test_raw(site: LocalServer, tmp_path: Path) -> None:
    done = markfetch("--raw", site.url("/api"), cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, '{"ok": true}', "")


@pytest.mark.parametrize(
    ("path", "prefix"),
    [("/api", "[unsupported_content_type] "), ("/gone", "[http_error] "), ("/jump", "[network_error] ")],
)
def test_errors_are_one_line_on_stderr_with_exit_1(
    site: LocalServer, tmp_path: Path, path: str, prefix: str
) -> None:
    done = markfetch(site.url(path), cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(prefix) and done.stderr.count("\n") == 1


def test_loopback_refusal_tells_a_cli_user_the_flag_to_pass(tmp_path: Path) -> None:
    done = markfetch("http://127.0.0.1:1/", cwd=tmp_path, MARKFETCH_ALLOW_HOSTS="")
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "[network_error] refusing to connect to 127.0.0.1: it is a loopback address"
    )
    assert "run with --allow-host 127.0.0.1 (or MARKFETCH_ALLOW_HOSTS)" in done.stderr
    assert "server" not in done.stderr  # the CLI is not a server: no advice to restart one


def test_bad_environment_and_bad_arguments_exit_2(tmp_path: Path) -> None:
    done = markfetch("http://127.0.0.1:1/", cwd=tmp_path, MARKFETCH_USER_AGENT="curl/8.0")
    assert done.returncode == 2 and done.stdout == "" and "MARKFETCH_USER_AGENT" in done.stderr
    done = markfetch("--bogus", cwd=tmp_path)
    assert done.returncode == 2 and "usage: markfetch" in done.stderr


def test_version_and_help(tmp_path: Path) -> None:
    from markfetch import __version__

    for flag in ("-V", "--version"):  # the bare version, as the reference prints it
        done = markfetch(flag, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{__version__}\n", "")
    help_text = markfetch("--help", cwd=tmp_path).stdout
    assert (
        "usage: markfetch" in help_text and "MCP stdio server" in help_text and "network_error" in help_text
    )


def test_help_does_not_import_the_mcp_sdk_or_the_extractor(tmp_path: Path) -> None:
    import sys

    code = (
        "import sys; from markfetch.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('mcp', 'trafilatura', 'lxml', 'httpx') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
