"""Remote markdown and images over real HTTP (a loopback server), under the host policy."""

from __future__ import annotations

import pytest

from md_vision.service import ImageBlock, MdVision, TextBlock, ToolFailure
from tests.md_vision.conftest import png_bytes, read, run, settings_for
from tests.support.http_server import LocalServer, Reply

MARKDOWN = "text/markdown; charset=utf-8"


@pytest.fixture
def server():
    with LocalServer() as s:
        yield s


def _local(tmp_path, *domains, **limits):
    return settings_for(tmp_path, domains=domains or ("127.0.0.1",), **limits)


def test_remote_read_resolves_relative_images_against_the_document_url(server, tmp_path) -> None:
    body = "<!-- generated -->\n# Remote\n\n![a](img/a.png)\n![b](/abs/b.png)\n"
    server.route("/docs/guide.md", Reply(body=body, content_type=MARKDOWN))
    server.route("/docs/img/a.png", Reply(body=png_bytes(colour=(1, 2, 3)), content_type="image/png"))
    server.route("/abs/b.png", Reply(body=png_bytes(colour=(4, 5, 6)), content_type="image/png"))
    result = read(_local(tmp_path), server.url("/docs/guide.md"))
    assert result.source_text == body  # starts with an HTML comment and is still markdown
    images = [block for block in result.blocks if isinstance(block, ImageBlock)]
    assert [image.source for image in images] == [server.url("/docs/img/a.png"), server.url("/abs/b.png")]
    assert images[0].data == png_bytes(colour=(1, 2, 3))


def test_remote_index_uses_the_final_url(server, tmp_path) -> None:
    server.route("/old.md", Reply.redirect("/new.md"))
    server.route("/new.md", Reply(body="# Moved\n## Here\n", content_type=MARKDOWN))
    result = run(_index(_local(tmp_path), server.url("/old.md")))
    assert result.text.startswith(f'<file path="{server.url("/new.md")}" lines=2 chars=16>')


async def _index(settings, uri, resolver=None):
    async with MdVision(settings, resolver=resolver) as vision:
        return await vision.index(uri)


@pytest.mark.parametrize(
    "page",
    ["<!DOCTYPE html><html><body>hi</body></html>", "<!-- c -->\n<html lang=en><head></head></html>"],
)
def test_html_page_is_refused_clearly(server, tmp_path, page) -> None:
    server.route("/page", Reply(body=page, content_type="text/html"))
    with pytest.raises(ToolFailure, match="returned an HTML page, not markdown"):
        read(_local(tmp_path), server.url("/page"))


def test_binary_content_type_is_refused(server, tmp_path) -> None:
    server.route("/pic.md", Reply(body=png_bytes(), content_type="image/png"))
    with pytest.raises(ToolFailure, match="not markdown"):
        read(_local(tmp_path), server.url("/pic.md"))


def test_redirect_to_another_loopback_name_is_refused(server, tmp_path) -> None:
    server.route("/start.md", Reply.redirect(f"http://localhost:{server.port}/secret.md"))
    server.route("/secret.md", Reply(body="# secret\n", content_type=MARKDOWN))
    with pytest.raises(ToolFailure, match="'localhost' is not allowed"):
        read(_local(tmp_path), server.url("/start.md"))
    assert [request.path for request in server.requests] == ["/start.md"]


def test_redirect_to_metadata_address_is_refused(server, tmp_path) -> None:
    server.route("/start.md", Reply.redirect("http://169.254.169.254/latest/meta-data/"))
    with pytest.raises(ToolFailure, match="not allowed"):
        read(_local(tmp_path), server.url("/start.md"))


class _Resolver:
    def __init__(self, table):
        self.table = table

    async def resolve(self, host, port):
        if host not in self.table:
            raise OSError("no such host")
        return self.table[host]


def test_suffix_allowed_host_resolving_to_loopback_is_refused(server, tmp_path) -> None:
    server.route("/x.md", Reply(body="# x\n", content_type=MARKDOWN))
    resolver = _Resolver({"docs.example.test": ["127.0.0.1"]})
    with pytest.raises(ToolFailure, match="loopback address"):
        run(
            _index(_local(tmp_path, "example.test"), f"http://docs.example.test:{server.port}/x.md", resolver)
        )
    # Naming that exact host allows it.
    result = run(
        _index(
            _local(tmp_path, "docs.example.test"), f"http://docs.example.test:{server.port}/x.md", resolver
        )
    )
    assert "# x\t1\t0\t4" in result.text


def test_allow_all_still_refuses_loopback(server, tmp_path) -> None:
    server.route("/x.md", Reply(body="# x\n", content_type=MARKDOWN))
    with pytest.raises(ToolFailure, match="loopback"):
        read(settings_for(tmp_path, domains=("all",)), server.url("/x.md"))
    assert server.requests == []


def test_urls_disabled_with_none(tmp_path) -> None:
    with pytest.raises(ToolFailure, match="--allow-host none"):
        read(settings_for(tmp_path), "https://example.com/readme.md")


def test_images_are_checked_per_image_and_per_hop(server, tmp_path) -> None:
    body = (
        "# R\n![ok](ok.png)\n![hop](hop.png)\n![other](http://elsewhere.example/x.png)\n![html](page.png)\n"
    )
    server.route("/doc.md", Reply(body=body, content_type=MARKDOWN))
    server.route("/ok.png", Reply(body=png_bytes(), content_type="image/png"))
    server.route("/hop.png", Reply.redirect(f"http://localhost:{server.port}/ok.png"))
    server.route("/page.png", Reply(body="<html></html>", content_type="text/html"))
    result = read(_local(tmp_path), server.url("/doc.md"))
    placeholders = [b.text for b in result.blocks if isinstance(b, TextBlock) and b.role == "placeholder"]
    assert result.images_inlined == 1
    assert "'localhost' is not allowed" in placeholders[0]
    assert "'elsewhere.example' is not allowed" in placeholders[1]
    assert "not an image" in placeholders[2]


def test_fetch_timeout_and_byte_cap(server, tmp_path) -> None:
    server.route("/slow.md", Reply(body="# slow\n", content_type=MARKDOWN, delay=1.0))
    server.route("/big.md", Reply(body="# big\n" + "x" * 5000, content_type=MARKDOWN))
    with pytest.raises(ToolFailure, match="--fetch-timeout"):
        read(_local(tmp_path, fetch_timeout_s=0.2), server.url("/slow.md"))
    with pytest.raises(ToolFailure, match="limit of 1,000"):
        read(_local(tmp_path, max_markdown_bytes=1000), server.url("/big.md"))


def test_remote_http_errors_are_reported(server, tmp_path) -> None:
    with pytest.raises(ToolFailure, match="404"):
        read(_local(tmp_path), server.url("/nothing.md"))


@pytest.mark.parametrize("label", ["undefined", "idna", "punycode", "utf-7"])
def test_a_charset_no_browser_knows_is_ignored(server, tmp_path, label) -> None:
    """ "undefined" and "idna" raise on any input (a crash once), "punycode" decodes in quadratic
    time, "utf-7" rewrites "+ADw-": a server naming one names no encoding."""
    body = "# Caf\u00e9 +ADw-b+AD4-\n\nCr\u00e8me.\n".encode("cp1252")  # not UTF-8: the label was tried
    server.route("/doc.md", Reply(body=body, content_type=f"text/markdown; charset={label}"))
    assert read(_local(tmp_path), server.url("/doc.md")).source_text == "# Café +ADw-b+AD4-\n\nCrème.\n"
