"""Conformance with the JavaScript markfetch: one test per behaviour its test suite checks (CLI,
server, end-to-end, snapshots, sandbox), named after that test, on fixtures of our own.

Where the reference test drove the server, these drive ours through a real MCP client over stdio
(the installed console script, which is also the "built output" of the reference's e2e tests).
Where we differ on purpose, the test asserts our behaviour and says so; every such difference is
listed with its reason in tools/markfetch/README.md ("Differences from the JavaScript server").

Deliberate, everywhere here: the reference's mock server is on 127.0.0.1, which markfetch refuses
unless allowed, so the servers run with ``MARKFETCH_ALLOW_HOSTS=127.0.0.1``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.types import CallToolResult

from markfetch import __version__
from tests.markfetch.test_mcp import console_script
from tests.support.http_server import LocalServer, Reply
from tests.support.mcp_stdio import StdioSession

HTML = "text/html; charset=utf-8"
ERROR_CODE = re.compile(
    r"^\[(network_error|http_error|timeout|unsupported_content_type|extraction_failed|too_large|"
    r"save_failed|save_forbidden)\] "
)

ARTICLE = """<!DOCTYPE html>
<html lang="en"><head><title>Field notes</title></head>
<body>
  <header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>
  <main><article>
    <h1>Tuning the ferry timetable</h1>
    <p>The harbour office published a revised timetable this spring, and the morning crossings now
    leave twelve minutes earlier than before. Commuters asked for the change at the winter hearing.</p>
    <h2>What changed</h2>
    <p>Two crossings were merged, the last evening boat now waits for the train, and the weekend
    service starts an hour later to match the demand counted over the summer season.</p>
    <h2>How riders took it</h2>
    <p>Most riders welcomed the earlier start, although a few parents said the new times clash with
    the school bell on the island side of the route, and asked for a later Friday boat.</p>
  </article></main>
  <footer>Harbour office, all rights reserved</footer>
</body></html>"""

NON_ASCII = """<!DOCTYPE html>
<html lang="de"><head><title>Multibyte Test</title></head>
<body><main><article>
  <h1>Café — résumé — façade · Москва</h1>
  <p>Der Gedankenstrich (—), der Halbgeviertstrich (–) und die Auslassungspunkte (…) machen diesen
  Absatz in UTF-8 mehrbytig; naïve Diakritika kommen dazu, damit der Absatz lang genug ist.</p>
  <h2>Abschnitt — Zürich</h2>
  <p>Weitere Wörter: Klischee, naiv, Café, Résumé, Fassade, Jalapeño, Zürich, Москва. Jeder
  Gedankenstrich ist in UTF-8 drei Bytes lang, aber nur eine UTF-16-Codeeinheit.</p>
</article></main></body></html>"""


# Over 999 bytes of markdown, multibyte throughout: the confirmation must carry plain digits.
LONG_MULTIBYTE = NON_ASCII.replace(
    "</article>",
    "".join(
        f"<h2>Teil {n} — Überfahrt</h2><p>Die Fähre nach Zürich-Süd fährt um {n}:15 ab; "
        "Gedankenstriche — und Umlaute ä ö ü machen jede Zeile mehrbytig.</p>"
        for n in range(1, 9)
    )
    + "</article>",
)


def snapshot_page(title: str, body: str) -> str:
    return f'<!DOCTYPE html><html lang="en"><head><title>{title}</title></head><body>{body}</body></html>'


PROSE = (
    "<p>A closing paragraph gives the reader view enough prose to keep the article: the quay was "
    "quiet that evening, the nets were mended, and the boats waited for the tide to turn.</p>"
)

SNAPSHOTS = {
    "escape-policy-mid-prose": snapshot_page(
        "Escaping",
        "<article><h1>Escaping in running text</h1>"
        '<p>The format uses a <a href="https://example.org/prefix">prefix code</a>-based scheme '
        "and a key=value header; read()-style calls and write()-supporting readers stay as written, "
        "with <em>pp. 12–19</em>. quoted in passing.</p>" + PROSE + "</article>",
    ),
    "citation-bracket-link": snapshot_page(
        "Citations",
        "<article><h1>Citations in running text</h1>"
        '<p>The tide tables were first printed in 1833<sup><a href="#note-1">[1]</a></sup> and '
        'revised after the storm<sup><a href="#note-2">[2]</a></sup>, as the harbour records show.</p>'
        + PROSE
        + '<h2 id="note-1">Notes</h2><p>The notes are short on purpose.</p></article>',
    ),
    "anchor-chrome-mdn-style": snapshot_page(
        "Status codes",
        "<article><h1>Status codes</h1>"
        '<h2><a href="#informational">Informational answers</a></h2><p>Provisional answers come '
        "before the final one, while the request is still being worked on by the other side.</p>"
        '<h2><a href="#success">Successful answers</a></h2><p>The request was received, understood '
        "and accepted; the most common of these is the plain one that carries the page itself.</p>"
        + PROSE
        + "</article>",
    ),
    "sphinx-permalink": snapshot_page(
        "Module docs",
        "<article><h1>tides — tide table reader"
        '<a class="headerlink" href="#module-tides" title="Link to this heading">¶</a></h1>'
        '<p>Source code: <a href="https://example.org/src/tides">src/tides</a></p>'
        "<p>The module reads published tide tables and answers when the next high water is due, for "
        "any harbour whose table it has been given, with the times in the harbour's own zone.</p>"
        '<h2>Basic use<a class="headerlink" href="#basic" title="Link to this heading">¶</a></h2>'
        "<p>Load a table with load and ask it with next_high; both accept a harbour name and return "
        "plain values that print as the printed table would show them.</p>" + PROSE + "</article>",
    ),
    "no-h1-bbc-style": snapshot_page(
        "Ferry crews trained for winter storms",
        "<header><h2>Ferry crews trained for winter storms</h2><p>By a harbour reporter</p></header>"
        "<article><p>Crews from three harbours spent a week on storm drills before the winter "
        "timetable starts, practising rescues in heavy swell off the northern breakwater.</p>"
        "<h2>The drills</h2><p>Each crew ran the same drills twice, once by day and once at night, "
        "with the coastguard timing every launch and every return to the quay.</p>" + PROSE + "</article>",
    ),
    "multi-line-table-cell": snapshot_page(
        "Type map",
        "<article><h1>Type map</h1><p>The table maps wire types to runtime types; one cell holds a "
        "list, which a pipe table cannot hold as a list, yet every word of it must stay.</p>"
        "<table><thead><tr><th>Wire</th><th>Runtime</th></tr></thead><tbody>"
        "<tr><td>map</td><td><ul><li>dict</li><li>OrderedDict (with object_pairs_hook)</li></ul></td></tr>"
        "<tr><td>sequence</td><td>list</td></tr></tbody></table>" + PROSE + "</article>",
    ),
    "intraword-underscore": snapshot_page(
        "Identifiers",
        "<article><h1>Identifiers in prose</h1><p>Calls such as <code>load_table</code> and "
        "next_high_water, or <em>tide.find(name, *, strict=False, **options)</em>, keep their "
        "underscores as written; an underscore between letters cannot open emphasis.</p>"
        + PROSE
        + "</article>",
    ),
    "code-fence-language": snapshot_page(
        "Code",
        "<article><h1>Code with a language</h1><p>Generators mark a block's language on its code "
        "element, and the fence must carry it on.</p>"
        '<pre><code class="language-python">def next_high(table: str) -&gt; int:\n'
        "    return 6\n</code></pre><p>And a second block, in another language.</p>"
        '<pre><code class="language-javascript">const high = (t) =&gt; {\n  return 6;\n};\n</code></pre>'
        + PROSE
        + "</article>",
    ),
    "baseline-clean-article": ARTICLE,
    "inline-hash-heading": snapshot_page(
        "Runner setup",
        "<article><h1>Runner setup</h1><p>Installing a runner takes two steps, each safe to run "
        "again when something fails half way through.</p>"
        "<h2>Step 1 # fetch the agent</h2><p>Download the release for your platform and unpack it "
        "into an empty folder owned by the service account.</p>"
        "<h2>Step 2 # register it</h2><p>Run the config script with a fresh registration token; "
        "the token works once and expires after an hour.</p>" + PROSE + "</article>",
    ),
}


def _hang(_request: object) -> Reply:
    return Reply(body=ARTICLE, content_type=HTML, delay=3.0)


@pytest.fixture(scope="module")
def site() -> Iterator[LocalServer]:
    with LocalServer() as server:
        server.route("/", Reply(body=ARTICLE, content_type=HTML))
        server.route("/multibyte", Reply(body=NON_ASCII, content_type=HTML))
        server.route("/long-multibyte", Reply(body=LONG_MULTIBYTE, content_type=HTML))
        server.route(
            "/missing", Reply(status=404, body="<html><body>not here</body></html>", content_type=HTML)
        )
        server.route("/json", Reply.json({"tide": "high", "at": [6, 18]}))
        server.route("/upper", Reply(body=ARTICLE, content_type="TEXT/HTML; charset=utf-8"))
        server.route("/xhtml", Reply(body=ARTICLE, content_type="application/xhtml+xml"))
        server.route("/empty", Reply(body="<html><body></body></html>", content_type=HTML))
        server.route(
            "/raw-html",
            Reply(body="<html><body><nav>menu</nav><p>Body.</p></body></html>", content_type=HTML),
        )
        server.route(
            "/big-declared", Reply(body="<html><body>" + "x" * 5000 + "</body></html>", content_type=HTML)
        )
        server.route(
            "/big-chunked",
            Reply(body=[b"<html><body>", b"x" * 5000, b"</body></html>"], content_type=HTML),
        )
        server.route("/big-json", Reply(body="y" * 5000, content_type="application/json"))
        server.route("/hang", _hang)
        for name, page in SNAPSHOTS.items():
            server.route(f"/snapshot/{name}", Reply(body=page, content_type=HTML))
        yield server


def _params(cwd: Path, **env: str) -> StdioServerParameters:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "MARKFETCH_ALLOW_HOSTS": "127.0.0.1"}
    return StdioServerParameters(command=console_script(), args=[], env={**base, **env}, cwd=str(cwd))


@pytest.fixture(scope="module")
def server_cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("markfetch-cwd")


@pytest.fixture(scope="module")
def session(server_cwd: Path) -> Iterator[StdioSession]:
    """One markfetch MCP server over stdio, with the default write roots (temp folder and cwd)."""
    with StdioSession(_params(server_cwd)) as opened:
        yield opened


def fetch(session: StdioSession, url: str, **arguments: object) -> CallToolResult:
    return session.call("fetch_markdown", {"url": url, **arguments})


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def assert_schema_rejection(result: CallToolResult) -> None:
    """Refused by the input schema: an error, and not one of the tool's own [code] lines."""
    assert result.is_error is True
    assert not ERROR_CODE.match(text_of(result)), text_of(result)


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
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


# -- cli.test --------------------------------------------------------------------------------


def test_cli_happy_path_markdown_to_stdout_stderr_empty_exit_0(site: LocalServer, tmp_path: Path) -> None:
    done = cli(site.url("/"), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("# Tuning the ferry timetable\n\n")  # the article's H1 (issue 18)
    assert "## What changed" in done.stdout and "Home" not in done.stdout


def test_cli_raw_returns_the_unprocessed_body_verbatim_to_stdout(site: LocalServer, tmp_path: Path) -> None:
    done = cli(site.url("/json"), "--raw", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, '{"tide": "high", "at": [6, 18]}', "")


def test_cli_o_absolute_path_writes_file_prints_confirmation(site: LocalServer, tmp_path: Path) -> None:
    # Deliberate difference: the confirmation goes to stderr; stdout carries the document or nothing.
    target = tmp_path / "out.md"
    done = cli(site.url("/"), "-o", str(target), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("Saved ") and done.stderr.strip().endswith(str(target))
    assert "# Tuning the ferry timetable" in target.read_text(encoding="utf-8")
    reported = int(re.match(r"Saved ([\d,]+) bytes", done.stderr).group(1).replace(",", ""))
    assert reported == target.stat().st_size


def test_cli_o_relative_path_is_resolved_against_cwd(site: LocalServer, tmp_path: Path) -> None:
    done = cli(site.url("/"), "-o", "out.md", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.strip().endswith(str(tmp_path / "out.md"))
    assert "# Tuning the ferry timetable" in (tmp_path / "out.md").read_text(encoding="utf-8")


def test_cli_unresolvable_host_network_error_on_stderr_exit_non_zero(tmp_path: Path) -> None:
    done = cli("http://no-such-host-xyz-12345.invalid", cwd=tmp_path)
    assert done.returncode != 0 and done.stdout == "" and done.stderr.startswith("[network_error] ")


def test_cli_404_response_http_error_on_stderr_exit_non_zero(site: LocalServer, tmp_path: Path) -> None:
    done = cli(site.url("/missing"), cwd=tmp_path)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.startswith("[http_error] ") and "404" in done.stderr


def test_cli_timeout_when_markfetch_timeout_ms_is_small_and_server_hangs(
    site: LocalServer, tmp_path: Path
) -> None:
    done = cli(site.url("/hang"), cwd=tmp_path, MARKFETCH_TIMEOUT_MS="200")
    assert done.returncode != 0 and done.stdout == "" and done.stderr.startswith("[timeout] ")


def test_cli_help_prints_usage_to_stdout_exit_0(tmp_path: Path) -> None:
    done = cli("--help", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "usage: markfetch" in done.stdout and "URL" in done.stdout and "--output" in done.stdout


def test_cli_version_prints_version_to_stdout_exit_0(tmp_path: Path) -> None:
    done = cli("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{__version__}\n", "")


def test_cli_malformed_url_surfaces_as_network_error_not_a_parser_rejection(tmp_path: Path) -> None:
    done = cli("not-a-url", cwd=tmp_path)
    assert done.returncode != 0 and done.stdout == "" and done.stderr.startswith("[network_error] ")


# -- server.test: start-up, happy path, errors -------------------------------------------------


def test_server_boots_over_stdio_and_completes_the_initialize_handshake(session: StdioSession) -> None:
    assert session.server_info is not None
    assert (session.server_info.name, session.server_info.version) == ("markfetch", __version__)


def test_fetch_markdown_tool_is_listed(session: StdioSession) -> None:
    assert [tool.name for tool in session.tools()] == ["fetch_markdown"]


def test_happy_path_deterministic_fixture_pure_markdown_body_in_content_0(
    session: StdioSession, site: LocalServer
) -> None:
    result = fetch(session, site.url("/"))
    text = text_of(result)
    assert result.is_error is False and len(result.content) == 1
    assert not text.startswith("---\n")
    assert text.startswith("# Tuning the ferry timetable\n\n")
    assert "## What changed" in text and "## How riders took it" in text
    assert "<nav>" not in text and "Home" not in text and "all rights reserved" not in text
    # Differs on purpose: beside the text, structuredContent gives the title, final URL and method
    # (never the document); --no-structured-output restores the reference's text-only result.
    assert result.structured_content == {
        "title": "Tuning the ferry timetable",
        "url": site.url("/"),
        "method": "reader",
        "bytes": len(text.encode()),
        "saved_to": "",
    }


def test_zod_syntax_malformed_url_is_rejected_at_the_schema_boundary(session: StdioSession) -> None:
    assert_schema_rejection(fetch(session, "not-a-url"))


def test_error_network_error_on_unresolvable_host(session: StdioSession) -> None:
    result = fetch(session, "http://no-such-host-xyz-12345.invalid")
    assert result.is_error is True and text_of(result).startswith("[network_error] ")


def test_error_http_error_on_404_response(session: StdioSession, site: LocalServer) -> None:
    result = fetch(session, site.url("/missing"))
    assert (
        result.is_error is True and text_of(result).startswith("[http_error] ") and "404" in text_of(result)
    )


def test_error_timeout_when_server_hangs_and_markfetch_timeout_ms_is_small(
    site: LocalServer, server_cwd: Path
) -> None:
    with StdioSession(_params(server_cwd, MARKFETCH_TIMEOUT_MS="200")) as quick:
        result = fetch(quick, site.url("/hang"))
    assert result.is_error is True and text_of(result).startswith("[timeout] ")


def test_error_unsupported_content_type_for_non_html_responses(
    session: StdioSession, site: LocalServer
) -> None:
    result = fetch(session, site.url("/json"))
    assert result.is_error is True and text_of(result).startswith("[unsupported_content_type] ")
    assert "application/json" in text_of(result)


def test_content_type_case_insensitive_match_accepts_text_html(
    session: StdioSession, site: LocalServer
) -> None:
    assert fetch(session, site.url("/upper")).is_error is False


def test_content_type_application_xhtml_xml_is_accepted(session: StdioSession, site: LocalServer) -> None:
    assert fetch(session, site.url("/xhtml")).is_error is False


def test_error_extraction_failed_when_readability_finds_nothing(
    session: StdioSession, site: LocalServer
) -> None:
    result = fetch(session, site.url("/empty"))
    assert result.is_error is True and text_of(result).startswith("[extraction_failed] ")


def test_raw_non_html_body_is_returned_verbatim(session: StdioSession, site: LocalServer) -> None:
    result = fetch(session, site.url("/json"), raw=True)
    assert result.is_error is False and text_of(result) == '{"tide": "high", "at": [6, 18]}'


def test_raw_html_is_returned_unprocessed_not_run_through_readability(
    session: StdioSession, site: LocalServer
) -> None:
    result = fetch(session, site.url("/raw-html"), raw=True)
    assert text_of(result) == "<html><body><nav>menu</nav><p>Body.</p></body></html>"


@pytest.fixture(scope="module")
def small_session(server_cwd: Path) -> Iterator[StdioSession]:
    with StdioSession(_params(server_cwd, MARKFETCH_MAX_BYTES="100")) as opened:
        yield opened


def test_raw_markfetch_max_bytes_still_applies_too_large(
    small_session: StdioSession, site: LocalServer
) -> None:
    result = fetch(small_session, site.url("/big-json"), raw=True)
    assert result.is_error is True and text_of(result).startswith("[too_large] ")


def test_error_too_large_via_content_length_pre_check(small_session: StdioSession, site: LocalServer) -> None:
    # Our wording: "declares N bytes" for the header check (the reference names "Content-Length").
    result = fetch(small_session, site.url("/big-declared"))
    assert result.is_error is True and text_of(result).startswith("[too_large] ")
    assert "declares 5,026 bytes" in text_of(result)


def test_error_too_large_via_post_decode_body_bytes_check_chunked(
    small_session: StdioSession, site: LocalServer
) -> None:
    # Counted on the stream, after decompression ("sent more than the limit"; the reference: "Body").
    result = fetch(small_session, site.url("/big-chunked"))
    assert result.is_error is True and text_of(result).startswith("[too_large] ")
    assert "sent more than the limit of 100 bytes" in text_of(result)


def _start_with(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return subprocess.run(
        [console_script()], env={**base, **env}, input="", capture_output=True, text=True, timeout=60
    )


def test_env_var_validation_invalid_markfetch_timeout_ms_fails_fast_at_startup(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_TIMEOUT_MS="abc")
    assert done.returncode != 0 and "MARKFETCH_TIMEOUT_MS" in done.stderr and "positive" in done.stderr


def test_env_var_validation_negative_markfetch_max_bytes_is_rejected(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_MAX_BYTES="-1")
    assert done.returncode != 0 and "MARKFETCH_MAX_BYTES" in done.stderr


def test_env_var_validation_non_chrome_markfetch_user_agent_fails_fast_at_startup(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_USER_AGENT="Mozilla/5.0 (X11; FreeBSD) Firefox/120.0")
    assert done.returncode != 0 and "MARKFETCH_USER_AGENT" in done.stderr and "Chrome" in done.stderr


def test_sec_ch_ua_client_hints_are_derived_from_markfetch_user_agent(
    site: LocalServer, server_cwd: Path
) -> None:
    agent = (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.0.0 Safari/537.36"
    )
    with StdioSession(_params(server_cwd, MARKFETCH_USER_AGENT=agent)) as custom:
        before = len(site.requests)
        assert fetch(custom, site.url("/")).is_error is False
    headers = site.requests[before].headers
    assert headers["user-agent"] == agent
    assert 'v="125"' in headers["sec-ch-ua"]
    assert (headers["sec-ch-ua-mobile"], headers["sec-ch-ua-platform"]) == ("?0", '"Windows"')


def test_per_request_errors_do_not_leak_to_stderr(site: LocalServer, server_cwd: Path) -> None:
    # Issue 18: nothing on stderr while serving a failure (network, 404) and a success (200).
    with StdioSession(_params(server_cwd)) as fresh:
        failed = fetch(fresh, "http://no-such-host-xyz-12345.invalid")
        missing = fetch(fresh, site.url("/missing"))
        served = fetch(fresh, site.url("/"))
        stderr = fresh.stderr()
    assert failed.is_error and missing.is_error and served.is_error is False
    assert stderr == ""


def test_non_ascii_title_keeps_the_articles_own_h1(session: StdioSession, site: LocalServer) -> None:
    # The reference's multibyte fixture, read inline: the H1 stays although <title> differs.
    text = text_of(fetch(session, site.url("/multibyte")))
    assert text.startswith("# Café — résumé — façade · Москва\n\n") and "Multibyte Test" not in text
    assert "## Abschnitt — Zürich" in text


# -- server.test: savePath ---------------------------------------------------------------------


def test_savepath_happy_path_file_written_response_is_confirmation_contents_equal_inline(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "out.md"
    saved = fetch(session, site.url("/"), savePath=str(target))
    assert saved.is_error is False
    assert text_of(saved).startswith("Saved ") and text_of(saved).endswith(f" bytes to {target}")
    assert target.read_text(encoding="utf-8") == text_of(fetch(session, site.url("/")))


def test_savepath_raw_the_raw_body_is_written_to_disk(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "out.json"
    assert fetch(session, site.url("/json"), savePath=str(target), raw=True).is_error is False
    assert target.read_text(encoding="utf-8") == '{"tide": "high", "at": [6, 18]}'


def test_savepath_multibyte_confirmation_byte_count_equals_file_size_small(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "multibyte.md"
    text = text_of(fetch(session, site.url("/multibyte"), savePath=str(target)))
    match = re.match(r"^Saved (\d+) bytes to ", text)
    assert match is not None and int(match.group(1)) == target.stat().st_size


def test_savepath_multibyte_confirmation_byte_count_equals_file_size_over_999_bytes(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "article.md"
    text = text_of(fetch(session, site.url("/long-multibyte"), savePath=str(target)))
    assert target.stat().st_size > 999
    match = re.match(r"^Saved (\d+) bytes to ", text)
    assert match is not None and int(match.group(1)) == target.stat().st_size


def test_savepath_relative_path_is_refused_before_any_fetch(session: StdioSession, site: LocalServer) -> None:
    # Deliberate difference: refused by the tool as [save_forbidden] (one code for every sandbox
    # refusal, with the allowed roots named), not by the schema; nothing is fetched or written.
    before = len(site.requests)
    result = fetch(session, site.url("/"), savePath="relative/path.md")
    assert result.is_error is True and text_of(result).startswith("[save_forbidden] ")
    assert len(site.requests) == before


def test_savepath_tilde_path_is_refused_no_auto_expansion(session: StdioSession, site: LocalServer) -> None:
    result = fetch(session, site.url("/"), savePath="~/x.md")
    assert result.is_error is True and text_of(result).startswith("[save_forbidden] ")
    assert not (Path.home() / "x.md").exists() or (Path.home() / "x.md").stat().st_size == 0


def test_savepath_write_failure_surfaces_as_save_failed_file_is_not_created(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "nonexistent-subdir" / "out.md"
    result = fetch(session, site.url("/"), savePath=str(target))
    assert result.is_error is True and text_of(result).startswith("[save_failed] ")
    assert "folder does not exist" in text_of(result) and not target.exists()


def test_savepath_invariant_fetch_error_with_savepath_file_is_not_written(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "should-not-exist.md"
    result = fetch(session, site.url("/missing"), savePath=str(target))
    assert text_of(result).startswith("[http_error] ") and not target.exists()


def test_savepath_invariant_too_large_with_savepath_file_is_not_written(
    small_session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "should-not-exist.md"
    result = fetch(small_session, site.url("/big-declared"), savePath=str(target))
    assert text_of(result).startswith("[too_large] ") and not target.exists()


def test_savepath_existing_file_is_overwritten(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    # A deliberate difference (markfetch README, "Differences from the JavaScript server"): the
    # reference replaced an existing file silently; here it takes overwrite: true, and without it
    # the file is left alone and the call fails before fetching.
    target = tmp_path / "preexisting.md"
    target.write_text("old content from a previous run", encoding="utf-8")
    refused = fetch(session, site.url("/"), savePath=str(target))
    assert refused.is_error and "pass overwrite: true to replace it" in text_of(refused)
    assert target.read_text(encoding="utf-8") == "old content from a previous run"
    assert fetch(session, site.url("/"), savePath=str(target), overwrite=True).is_error is False
    assert target.read_text(encoding="utf-8").startswith("# Tuning the ferry timetable")


def test_savepath_sandbox_path_outside_default_roots_save_forbidden_and_not_written(
    session: StdioSession, site: LocalServer
) -> None:
    forbidden = Path("/markfetch-sandbox-forbidden.md")
    result = fetch(session, site.url("/"), savePath=str(forbidden))
    assert result.is_error is True and text_of(result).startswith("[save_forbidden] ")
    assert "outside the allowed" in text_of(result) and "MARKFETCH_ALLOWED_WRITE_ROOTS" in text_of(result)
    assert not forbidden.exists()


@pytest.fixture(scope="module")
def confined_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("markfetch-roots") / "root"


@pytest.fixture(scope="module")
def confined(server_cwd: Path, confined_root: Path) -> Iterator[StdioSession]:
    """A server whose only write root is ``confined_root`` (MARKFETCH_ALLOWED_WRITE_ROOTS)."""
    confined_root.mkdir()
    with StdioSession(_params(server_cwd, MARKFETCH_ALLOWED_WRITE_ROOTS=str(confined_root))) as opened:
        yield opened


def test_savepath_sandbox_symlink_escape_from_inside_sandbox_is_blocked(
    confined: StdioSession, confined_root: Path, site: LocalServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (confined_root / "escape").symlink_to(outside)
    result = fetch(confined, site.url("/"), savePath=str(confined_root / "escape" / "x.md"))
    assert text_of(result).startswith("[save_forbidden] ") and list(outside.iterdir()) == []


def test_savepath_sandbox_symlink_and_lexical_dotdot_writes_to_validated_path_not_deceptive(
    confined: StdioSession, confined_root: Path, site: LocalServer, tmp_path: Path
) -> None:
    # Ours refuses the path (its real path, link resolved, leaves the roots); the reference wrote to
    # the lexically normalised path. Either way nothing lands where the OS would have put it.
    outside = tmp_path / "elsewhere" / "outside"
    outside.mkdir(parents=True)
    (confined_root / "out-link").symlink_to(outside)
    deceptive = outside.parent / "dotdot-escape.md"
    result = fetch(confined, site.url("/"), savePath=f"{confined_root}/out-link/../dotdot-escape.md")
    assert text_of(result).startswith("[save_forbidden] ")
    assert not deceptive.exists() and not (confined_root / "dotdot-escape.md").exists()


def test_savepath_sandbox_markfetch_allowed_write_roots_replaces_the_defaults(
    confined: StdioSession, confined_root: Path, site: LocalServer, tmp_path: Path
) -> None:
    inside = fetch(confined, site.url("/"), savePath=str(confined_root / "inside.md"))
    denied = fetch(confined, site.url("/"), savePath=str(tmp_path / "outside.md"))  # in the temp folder
    assert inside.is_error is False and (confined_root / "inside.md").exists()
    assert text_of(denied).startswith("[save_forbidden] ") and not (tmp_path / "outside.md").exists()


def test_env_var_validation_non_absolute_markfetch_allowed_write_roots_fails_fast(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_ALLOWED_WRITE_ROOTS="relative/path")
    assert done.returncode != 0 and "MARKFETCH_ALLOWED_WRITE_ROOTS" in done.stderr
    assert "not an absolute path" in done.stderr


@pytest.mark.skipif(sys.platform != "win32", reason="Windows paths, as the reference's test (win32-gated)")
def test_savepath_windows_shaped_absolute_path_is_accepted_and_writes(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "win-shape.md"
    assert fetch(session, site.url("/"), savePath=str(target)).is_error is False and target.exists()


# -- e2e.test (the installed console script is the built output) -------------------------------


def test_e2e_built_output_boots_exposes_fetch_markdown_reports_package_version(session: StdioSession) -> None:
    assert session.server_info is not None and session.server_info.version == __version__
    assert [tool.name for tool in session.tools()] == ["fetch_markdown"]


def test_e2e_built_output_returns_markdown_for_a_mock_fixture(
    session: StdioSession, site: LocalServer
) -> None:
    text = text_of(fetch(session, site.url("/")))
    assert "Tuning the ferry timetable" in text and "## What changed" in text
    assert "<nav>" not in text and "all rights reserved" not in text


def test_e2e_built_output_returns_network_error_for_invalid_host(session: StdioSession) -> None:
    assert text_of(fetch(session, "http://no-such-host-zzz-99999.invalid")).startswith("[network_error] ")


def test_e2e_built_output_writes_markdown_to_savepath_returns_confirmation(
    session: StdioSession, site: LocalServer, tmp_path: Path
) -> None:
    target = tmp_path / "e2e.md"
    text = text_of(fetch(session, site.url("/"), savePath=str(target)))
    assert text.startswith("Saved ") and text.endswith(f" bytes to {target}")
    assert "Tuning the ferry timetable" in target.read_text(encoding="utf-8")


def test_e2e_built_output_cli_prints_markdown_to_stdout_exit_0(site: LocalServer, tmp_path: Path) -> None:
    done = cli(site.url("/"), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "") and "Tuning the ferry timetable" in done.stdout


def test_e2e_built_output_version_prints_package_version_exit_0(tmp_path: Path) -> None:
    done = cli("-V", cwd=tmp_path)
    assert (done.stdout, done.stderr) == (f"{__version__}\n", "")


WIKI_LIKE = snapshot_page(
    "Tide table - Wikipedia",
    '<div id="mw-navigation"><nav class="mw-portlet">Main page Contents Random</nav></div>'
    '<main id="content" class="mw-body"><h1 id="firstHeading" class="mw-first-heading">Tide table</h1>'
    '<div id="mw-content-text" class="mw-body-content"><div class="mw-parser-output">'
    "<p>A <b>tide table</b> lists the times and heights of high and low water at a place, computed "
    "from the harmonic constituents measured at a tide gauge over at least a year of readings.</p>"
    + "".join(
        f'<div class="mw-heading mw-heading2"><h2 id="s{n}">Section {n} on tide tables</h2></div>'
        f"<p>Paragraph {n}: harbour masters published tables for sailors, and almanacs copied them; "
        f"the predictions drift with the weather, which no table can know in advance, so margins matter.</p>"
        for n in range(4)
    )
    + "</div></div></main><script>var wg = 1;</script><style>.mw-x{}</style>"
    '<footer id="footer">Text is available under a licence.</footer>',
)
DOCS_LIKE = snapshot_page(
    "Commands - Docs",
    '<nav class="sidebar"><a href="/a">Overview</a><a href="/b">Commands</a></nav>'
    "<main><article><h1>Commands</h1><p>Every command starts with a slash and can be typed at the "
    "prompt; this page lists them with what each one does and the options it takes.</p>"
    "<h2>Built-in commands</h2><p>The clear command empties the screen; the help command lists every "
    "command with a one-line description of each.</p><pre><code class='language-shell'>/help\n/clear\n"
    "</code></pre>" + PROSE + "</article></main><script>track()</script>",
)


def test_e2e_live_wikipedia_extracts_title_sections_and_strips_chrome_offline_stand_in(
    session: StdioSession, site: LocalServer
) -> None:
    # The reference fetched en.wikipedia.org; this sandbox has no internet, so a MediaWiki-shaped page
    # of our own stands in, with the same property checks.
    site.route("/wiki", Reply(body=WIKI_LIKE, content_type=HTML))
    text = text_of(fetch(session, site.url("/wiki")))
    assert re.search(r"tide\s+table", text, re.IGNORECASE)
    assert len(re.findall(r"^## ", text, re.MULTILINE)) >= 3
    for chrome in ("<nav", "<script", "<style", 'class="mw-', "Random"):
        assert chrome not in text


def test_e2e_live_docs_page_extracts_content_as_clean_markdown_offline_stand_in(
    session: StdioSession, site: LocalServer
) -> None:
    site.route("/docs", Reply(body=DOCS_LIKE, content_type=HTML))
    text = text_of(fetch(session, site.url("/docs")))
    assert "command" in text.lower() and "<script" not in text and "<style" not in text
    assert re.search(r"^#{1,3} ", text, re.MULTILINE) and "```shell\n/help" in text


# -- snapshots.test: one behaviour per reference fixture ---------------------------------------


def snapshot(session: StdioSession, site: LocalServer, name: str) -> str:
    result = fetch(session, site.url(f"/snapshot/{name}"))
    assert result.is_error is False, text_of(result)
    return text_of(result).replace(site.url("/"), "http://mock/")


def test_snapshot_escape_policy_mid_prose(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "escape-policy-mid-prose")
    assert "[prefix code](https://example.org/prefix)-based scheme" in text
    assert "key=value" in text and "read()-style" in text and "write()-supporting" in text
    assert "\\-" not in text and "\\=" not in text and "\\." not in text
    assert "*pp. 12–19*." in text  # emphasis as *...* (the reference writes _..._)


def test_snapshot_citation_bracket_link(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "citation-bracket-link")
    page = "http://mock/snapshot/citation-bracket-link"
    assert f"[\\[1\\]]({page}#note-1)" in text and f"[\\[2\\]]({page}#note-2)" in text


def test_snapshot_anchor_chrome_mdn_style(session: StdioSession, site: LocalServer) -> None:
    # Deliberate difference: a heading's link to itself is unwrapped (the reference kept it as a
    # link), and the page's H1 stays as the title (the reference's pruning of empty headings took it).
    text = snapshot(session, site, "anchor-chrome-mdn-style")
    assert text.startswith("# Status codes\n\n")
    assert "## Informational answers\n" in text and "## Successful answers\n" in text


def test_snapshot_sphinx_permalink(session: StdioSession, site: LocalServer) -> None:
    # Deliberate difference: the ¶ permalink is dropped and the H1 stays an H1 (the reference
    # demoted it to ## and kept "[¶](...)" in both headings).
    text = snapshot(session, site, "sphinx-permalink")
    assert text.startswith("# tides — tide table reader\n\n") and "¶" not in text
    assert "## Basic use\n" in text and "Source code: [src/tides](https://example.org/src/tides)" in text


def test_snapshot_no_h1_bbc_style(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "no-h1-bbc-style")
    assert text.startswith("# Ferry crews trained for winter storms\n\nCrews from three harbours")
    assert text.count("Ferry crews trained for winter storms") == 1 and "By a harbour reporter" not in text
    assert "## The drills" in text


def test_snapshot_multi_line_table_cell(session: StdioSession, site: LocalServer) -> None:
    # Issue 18: every word of a list in a cell stays, as <br>-separated lines of one GFM row (the
    # reference's output broke the pipe table across lines).
    text = snapshot(session, site, "multi-line-table-cell")
    assert "| Wire | Runtime |\n|---|---|\n" in text
    assert "| map | • dict<br>• OrderedDict (with object_pairs_hook) |\n| sequence | list |" in text


def test_snapshot_intraword_underscore(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "intraword-underscore")
    assert "`load_table`" in text and "next_high_water" in text and "\\_" not in text
    assert "*tide.find(name, \\*, strict=False, \\*\\*options)*" in text


def test_snapshot_code_fence_language(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "code-fence-language")
    assert "```python\ndef next_high(table: str) -> int:\n    return 6\n```" in text
    assert "```javascript\nconst high = (t) => {\n  return 6;\n};\n```" in text


def test_snapshot_baseline_clean_article(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "baseline-clean-article")
    lines = text.split("\n")
    assert lines[0] == "# Tuning the ferry timetable" and "## What changed" in lines
    assert "Home" not in text and "all rights reserved" not in text


def test_snapshot_inline_hash_heading(session: StdioSession, site: LocalServer) -> None:
    text = snapshot(session, site, "inline-hash-heading")
    assert "\n## Step 1 # fetch the agent\n" in text and "\n## Step 2 # register it\n" in text


# -- sandbox.test (the write roots, at start and per path) --------------------------------------


def test_buildallowedroots_multi_entry_env_split_by_path_delimiter(
    site: LocalServer, server_cwd: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    roots = f"{first}{os.pathsep}{second}"
    with StdioSession(_params(server_cwd, MARKFETCH_ALLOWED_WRITE_ROOTS=roots)) as confined:
        results = [fetch(confined, site.url("/"), savePath=str(root / "x.md")) for root in (first, second)]
    assert all(result.is_error is False for result in results)
    assert (first / "x.md").exists() and (second / "x.md").exists()


def test_buildallowedroots_non_existent_entry_throws_fail_fast(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_ALLOWED_WRITE_ROOTS=str(tmp_path / "does-not-exist"))
    assert done.returncode != 0 and "does not exist" in done.stderr


def test_buildallowedroots_empty_entry_from_leading_delimiter_throws_fail_fast(tmp_path: Path) -> None:
    done = _start_with(tmp_path, MARKFETCH_ALLOWED_WRITE_ROOTS=f"{os.pathsep}{tmp_path}")
    assert done.returncode != 0 and "MARKFETCH_ALLOWED_WRITE_ROOTS" in done.stderr


def test_buildallowedroots_regular_file_entry_throws_fail_fast(tmp_path: Path) -> None:
    (tmp_path / "regular-file.txt").write_text("")
    done = _start_with(tmp_path, MARKFETCH_ALLOWED_WRITE_ROOTS=str(tmp_path / "regular-file.txt"))
    assert done.returncode != 0 and "not a directory" in done.stderr


def test_checkpath_dotdot_traversal_that_escapes_a_root_is_not_ok(
    confined: StdioSession, confined_root: Path, site: LocalServer
) -> None:
    (confined_root / "sub").mkdir()
    result = fetch(confined, site.url("/"), savePath=f"{confined_root}/sub/../../escape.md")
    assert (
        text_of(result).startswith("[save_forbidden] ") and not (confined_root.parent / "escape.md").exists()
    )


def test_checkpath_prefix_overlap_trap(
    confined: StdioSession, confined_root: Path, site: LocalServer
) -> None:
    evil = confined_root.parent / f"{confined_root.name}-evil"
    evil.mkdir()
    result = fetch(confined, site.url("/"), savePath=str(evil / "trap.md"))
    assert text_of(result).startswith("[save_forbidden] ") and not (evil / "trap.md").exists()


@pytest.mark.skipif(
    sys.platform != "win32", reason="case-insensitive paths are Windows's, as in the reference"
)
def test_checkpath_case_variant_paths_compare_equal_on_win32(
    site: LocalServer, server_cwd: Path, tmp_path: Path
) -> None:
    with StdioSession(_params(server_cwd, MARKFETCH_ALLOWED_WRITE_ROOTS=str(tmp_path).lower())) as confined:
        result = fetch(confined, site.url("/"), savePath=str(tmp_path).upper() + "\\out.md")
    assert result.is_error is False
