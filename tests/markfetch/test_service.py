"""The fetch pipeline against a real loopback HTTP server: encodings, redirects, limits, refusals, cache."""

from __future__ import annotations

import gzip
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from markfetch.cache import ResponseCache
from markfetch.errors import ErrorCode, MarkfetchError
from tests.markfetch.conftest import run_document, site_url
from tests.markfetch.pages import SHIFT_JIS_TEXT, WINDOWS_1252_TEXT, article_page, page, paragraphs
from tests.support.http_server import LocalServer, Reply

HTML = "text/html; charset=utf-8"


def error_of(settings, url: str, **kwargs) -> MarkfetchError:
    with pytest.raises(MarkfetchError) as info:
        run_document(settings, url, **kwargs)
    return info.value


def test_article_over_http_with_a_chrome_header_set(server: LocalServer, settings) -> None:
    server.route("/a", Reply(body=page("article"), content_type=HTML))
    markdown = run_document(replace(settings, accept_language="de-DE,de;q=0.9"), site_url(server, "/a"))
    assert markdown.startswith("# How tide pools survive the summer\n\n")
    headers = server.requests[0].headers
    assert "Chrome/136" in headers["user-agent"]
    assert headers["sec-ch-ua"] == '"Chromium";v="136", "Google Chrome";v="136", "Not.A/Brand";v="99"'
    assert headers["sec-ch-ua-platform"] == '"Windows"' and headers["sec-ch-ua-mobile"] == "?0"
    assert headers["accept-language"] == "de-DE,de;q=0.9"
    assert headers["sec-fetch-mode"] == "navigate"
    assert "gzip" in headers["accept-encoding"]


def test_gzip_body(server: LocalServer, settings) -> None:
    server.route("/g", Reply(body=page("article").encode(), content_type=HTML, gzip_body=True))
    assert "Tide pools are small worlds" in run_document(settings, site_url(server, "/g"))


def test_chunked_body(server: LocalServer, settings) -> None:
    data = page("article").encode()
    chunks = [data[i : i + 500] for i in range(0, len(data), 500)]
    server.route("/c", Reply(body=iter(chunks), content_type=HTML))
    assert "Shaded pools held more species" in run_document(settings, site_url(server, "/c"))


def test_relative_links_resolve_against_the_final_url_after_redirects(server: LocalServer, settings) -> None:
    body = article_page(
        paragraphs(3) + '<p>Read <a href="next.html">the next part</a> of the harbour story.</p>'
    )
    server.route("/old/start", Reply.redirect(site_url(server, "/new/place/")))
    server.route("/new/place/", Reply(body=body, content_type=HTML))
    markdown = run_document(settings, site_url(server, "/old/start"))
    assert f"[the next part]({site_url(server, '/new/place/next.html')})" in markdown


def test_windows_1252_page_declared_in_the_header(server: LocalServer, settings) -> None:
    body = article_page(paragraphs(3) + f"<p>{WINDOWS_1252_TEXT}</p>", head="").encode("cp1252")
    server.route("/w", Reply(body=body, content_type="text/html; charset=windows-1252"))
    assert WINDOWS_1252_TEXT in run_document(settings, site_url(server, "/w"))


def test_shift_jis_page_declared_in_meta(server: LocalServer, settings) -> None:
    body = article_page(f"<p>{SHIFT_JIS_TEXT * 4}</p>" + paragraphs(2), head='<meta charset="shift_jis">')
    server.route("/j", Reply(body=body.encode("cp932"), content_type="text/html"))
    assert SHIFT_JIS_TEXT in run_document(settings, site_url(server, "/j"))


@pytest.mark.parametrize(
    ("content_type", "head"),
    [
        ("text/html; charset=undefined", ""),
        ("text/html", "<meta charset=undefined>"),
        ("text/html; charset=idna", ""),
        ("text/html; charset=punycode", ""),
    ],
)
def test_a_charset_no_browser_knows_is_ignored(
    server: LocalServer, settings, content_type: str, head: str
) -> None:
    """Once a page naming "undefined" (badly templated sites send it) crashed the decoder, and
    "punycode" took minutes on a 5 MB body: such a label names no encoding."""
    body = article_page(paragraphs(3) + "<p>Caf\u00e9 cr\u00e8me, example.xn--zz9.</p>", head=head)
    server.route("/c", Reply(body=body.encode(), content_type=content_type))
    assert "Café crème, example.xn--zz9." in run_document(settings, site_url(server, "/c"))


def test_a_raw_body_under_a_hostile_charset_is_read_as_utf8(server: LocalServer, settings) -> None:
    server.route(
        "/r", Reply(body='{"name": "Café"}'.encode(), content_type="application/json; charset=undefined")
    )
    assert run_document(settings, site_url(server, "/r"), raw=True) == '{"name": "Café"}'


def test_missing_content_type_is_sniffed(server: LocalServer, settings) -> None:
    server.route("/n", Reply(body=page("article"), content_type=None))
    assert "Tide pools" in run_document(settings, site_url(server, "/n"))
    server.route("/t", Reply(body=b"just some text", content_type=None))
    assert error_of(settings, site_url(server, "/t")).code is ErrorCode.UNSUPPORTED_CONTENT_TYPE


def test_raw_returns_the_body_of_any_type(server: LocalServer, settings) -> None:
    server.route("/api", Reply.json({"name": "snake_case", "n": 1}))
    assert run_document(settings, site_url(server, "/api"), raw=True) == '{"name": "snake_case", "n": 1}'
    server.route("/h", Reply(body=page("shell"), content_type=HTML))
    assert run_document(settings, site_url(server, "/h"), raw=True) == page("shell")


# -- the error codes ---------------------------------------------------------------------------


def test_unsupported_content_type(server: LocalServer, settings) -> None:
    server.route("/api", Reply.json({"a": 1}))
    error = error_of(settings, site_url(server, "/api"))
    assert error.code is ErrorCode.UNSUPPORTED_CONTENT_TYPE
    assert str(error).startswith("[unsupported_content_type] ") and "application/json" in str(error)


def test_http_error(server: LocalServer, settings) -> None:
    server.route("/gone", Reply(status=404, body="nope"))
    error = error_of(settings, site_url(server, "/gone"))
    assert error.code is ErrorCode.HTTP_ERROR and "404" in error.message


def test_too_many_redirects_is_an_http_error(server: LocalServer, settings) -> None:
    server.route("/loop", Reply.redirect("/loop"))
    assert error_of(settings, site_url(server, "/loop")).code is ErrorCode.HTTP_ERROR


def test_network_errors(server: LocalServer, settings) -> None:
    assert error_of(settings, "http://unknown-host.test/").code is ErrorCode.NETWORK_ERROR
    with socket.socket() as probe:  # a port that was free a moment ago refuses connections
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    error = error_of(settings, f"http://site.test:{port}/")
    assert error.code is ErrorCode.NETWORK_ERROR and "could not connect" in error.message
    assert error_of(settings, "ftp://site.test/x").code is ErrorCode.NETWORK_ERROR
    assert error_of(settings, "not a url").code is ErrorCode.NETWORK_ERROR


def test_timeout(server: LocalServer, settings) -> None:
    server.route("/slow", Reply(body=page("article"), content_type=HTML, delay=1.0))
    error = error_of(replace(settings, timeout_ms=200), site_url(server, "/slow"))
    assert error.code is ErrorCode.TIMEOUT and "0.2 s" in error.message


def test_extraction_failed_on_a_client_rendered_shell(server: LocalServer, settings) -> None:
    server.route("/app", Reply(body=page("shell"), content_type=HTML))
    error = error_of(settings, site_url(server, "/app"))
    assert error.code is ErrorCode.EXTRACTION_FAILED and "JavaScript" in error.message


def test_byte_cap_at_its_edge_on_the_stream_and_on_content_length(server: LocalServer, settings) -> None:
    body = ("x" * 1000).encode()
    server.route("/exact", Reply(body=body, content_type="text/plain"))
    assert len(run_document(replace(settings, max_bytes=1000), site_url(server, "/exact"), raw=True)) == 1000
    # Declared too large: refused before the body is read.
    assert (
        error_of(replace(settings, max_bytes=999), site_url(server, "/exact"), raw=True).code
        is ErrorCode.TOO_LARGE
    )
    # Chunked, no Content-Length: counted on the stream.
    server.route("/stream", Reply(body=iter([b"y" * 600, b"y" * 600]), content_type="text/plain"))
    error = error_of(replace(settings, max_bytes=1000), site_url(server, "/stream"), raw=True)
    assert error.code is ErrorCode.TOO_LARGE and "1,000" in error.message
    # A small gzip body that expands past the cap is refused too.
    server.route("/bomb", Reply(body=b"z" * 5000, content_type="text/plain", gzip_body=True))
    assert len(gzip.compress(b"z" * 5000)) < 1000
    assert (
        error_of(replace(settings, max_bytes=1000), site_url(server, "/bomb"), raw=True).code
        is ErrorCode.TOO_LARGE
    )


def test_output_over_the_cap_is_too_large_never_truncated(server: LocalServer, settings) -> None:
    text = "日本語" * 100  # 600 bytes of Shift-JIS become 900 bytes of UTF-8
    server.route("/sj", Reply(body=text.encode("cp932"), content_type="text/plain; charset=shift_jis"))
    assert run_document(replace(settings, max_bytes=900), site_url(server, "/sj"), raw=True) == text
    error = error_of(replace(settings, max_bytes=899), site_url(server, "/sj"), raw=True)
    assert error.code is ErrorCode.TOO_LARGE and "the document is 900 bytes" in error.message


# -- SSRF ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("http://127.0.0.1:{port}/secret", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ],
)
def test_redirect_from_an_allowed_host_to_an_internal_address_is_refused(
    server: LocalServer, settings, target: str, kind: str
) -> None:
    server.route("/start", Reply.redirect(target.format(port=server.port)))
    server.route("/secret", Reply(body="secret", content_type=HTML))
    error = error_of(settings, site_url(server, "/start"))
    assert error.code is ErrorCode.NETWORK_ERROR and kind in error.message
    assert [r.path for r in server.requests] == ["/start"]


def test_internal_addresses_are_refused_without_the_allow_list(server: LocalServer, settings) -> None:
    server.route("/x", Reply(body=page("article"), content_type=HTML))
    error = error_of(replace(settings, allow_hosts=()), site_url(server, "/x"))
    assert "loopback" in error.message and error.code is ErrorCode.NETWORK_ERROR
    assert "loopback" in error_of(settings, server.url("/x")).message  # 127.0.0.1 itself is not listed
    assert server.requests == []
    assert "Tide pools" in run_document(replace(settings, allow_hosts=("127.0.0.1",)), server.url("/x"))


# -- cache -----------------------------------------------------------------------------------


def test_cache_serves_fresh_entries_and_refetches_stale_ones(
    server: LocalServer, settings, tmp_path: Path
) -> None:
    now = [1000.0]
    cache = ResponseCache(tmp_path, ttl_s=60, clock=lambda: now[0])
    server.route("/a", Reply(body=page("article"), content_type=HTML))
    first = run_document(settings, site_url(server, "/a"), cache=cache)
    now[0] += 59
    assert run_document(settings, site_url(server, "/a"), cache=cache) == first
    assert len(server.requests) == 1
    assert run_document(settings, site_url(server, "/a"), raw=True, cache=cache) == page("article")
    assert len(server.requests) == 1
    now[0] += 2
    run_document(settings, site_url(server, "/a"), cache=cache)
    assert len(server.requests) == 2


def test_cache_keeps_no_errors_and_ignores_corrupt_entries(
    server: LocalServer, settings, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path, ttl_s=60)
    server.route("/e", Reply(status=500, body="boom"))
    for _ in range(2):
        error_of(settings, site_url(server, "/e"), cache=cache)
    assert len(server.requests) == 2 and list(tmp_path.iterdir()) == []
    server.route("/a", Reply(body=page("article"), content_type=HTML))
    run_document(settings, site_url(server, "/a"), cache=cache)
    (entry,) = tmp_path.iterdir()
    assert entry.stat().st_mode & 0o077 == 0
    entry.write_bytes(b"garbage")
    assert "Tide pools" in run_document(settings, site_url(server, "/a"), cache=cache)
    assert len(server.requests) == 4


def test_a_cached_response_with_a_corrupt_header_is_a_miss_and_goes(tmp_path: Path) -> None:
    from docab_mcpguard.diskcache import DiskCache

    DiskCache(tmp_path, 60, suffix=".cache").put("k", b"not json\nbody")
    cache = ResponseCache(tmp_path, ttl_s=60)
    assert cache.get("k") is None
    assert not (tmp_path / "k.cache").exists()


def test_cache_does_not_bypass_the_host_policy(server: LocalServer, settings, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, ttl_s=60)
    assert error_of(settings, "file:///etc/passwd", cache=cache).code is ErrorCode.NETWORK_ERROR


# -- proxy -----------------------------------------------------------------------------------


def test_requests_go_through_the_configured_proxy_and_targets_are_still_checked(
    server: LocalServer, settings
) -> None:
    # The loopback server plays a forward proxy: it receives absolute-form request targets.
    server.route("/via-proxy", Reply(body=page("article"), content_type=HTML))
    proxied = replace(settings, proxy=server.base)
    assert "Tide pools" in run_document(proxied, "http://site.test/via-proxy")
    assert server.requests[-1].headers["host"] == "site.test"
    # A name that resolves to an internal address and is not allowed is refused before the proxy sees it.
    error = error_of(proxied, "http://other.test/via-proxy")
    assert error.code is ErrorCode.NETWORK_ERROR and "loopback" in error.message
    assert len(server.requests) == 1
