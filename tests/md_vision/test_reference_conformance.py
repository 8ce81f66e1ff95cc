"""Conformance with the JavaScript md-vision: one test per behaviour its test suite checks (access
flags, HTML images, remote text, standalone indexing, markdown utilities, server registration,
tool handlers, input schema), named after that test, on fixtures of our own.

Where the reference test drove the server or its tool handlers, these drive ours through a real
MCP client over stdio; its library and parsing tests map onto our library and pure functions.
Where we differ on purpose, the test asserts our behaviour and says so; every such difference is
listed with its reason in tools/md_vision/README.md ("Differences from the JavaScript server").
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from mcp import StdioServerParameters
from mcp.types import CallToolResult

from md_vision import index_markdown_file, index_markdown_folder, index_markdown_text
from md_vision.__main__ import FlagError, parse_settings
from md_vision.document import parse_document
from md_vision.index import index_document
from md_vision.selection import SelectionError, select
from md_vision.server import META_KEY
from tests.md_vision.conftest import png_bytes
from tests.support.http_server import LocalServer, Reply
from tests.support.mcp_stdio import StdioSession

PNG = png_bytes((2, 2))
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" '
    'fill="teal"/><circle cx="10" cy="10" r="6" fill="gold"/><circle cx="30" cy="10" r="6" fill="navy"/></svg>'
)
DOCUMENT = """---
title: Harbour guide
---

# Harbour

![Map](./map.png)

## Moorings

Berths are numbered from the east wall.

```md
## Not a heading
```

## Fees

Paid at the office.
"""


def _command() -> list[str]:
    script = shutil.which("md-vision") or str(Path(sys.executable).with_name("md-vision"))
    return [script] if os.path.exists(script) else [sys.executable, "-m", "md_vision"]


def _params(*args: str, cwd: Path | None = None) -> StdioServerParameters:
    command = _command()
    return StdioServerParameters(
        command=command[0], args=[*command[1:], *args], env=dict(os.environ), cwd=str(cwd) if cwd else None
    )


def _start(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_command(), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=cwd
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("md-vision-reference").resolve()


@pytest.fixture(scope="module")
def remote() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield server


@pytest.fixture(scope="module")
def session(root: Path, remote: LocalServer) -> Iterator[StdioSession]:
    """md-vision over stdio: local files under ``root``, URLs on the loopback test server only."""
    with StdioSession(_params("--allow-path", str(root), "--allow-domain", "127.0.0.1")) as opened:
        yield opened


@pytest.fixture
def folder(root: Path, request: pytest.FixtureRequest) -> Path:
    """A folder of this test's own under the allowed path."""
    path = root / request.node.name
    path.mkdir()
    return path


def read(session: StdioSession, uri: str | Path, **arguments: object) -> CallToolResult:
    return session.call("read_md_with_images", {"uri": str(uri), **arguments})


def kinds(result: CallToolResult) -> list[str]:
    return [block.type for block in result.content]


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


def roles(result: CallToolResult) -> list[str]:
    return list(result.meta[META_KEY]["roles"])


# -- access.test ------------------------------------------------------------------------------


def test_parses_repeatable_allow_path_and_allow_domain_flags(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "more").mkdir()
    settings = parse_settings(
        [
            "--allow-path",
            str(tmp_path / "docs"),
            f"--allow-path={tmp_path / 'more'}",
            "--allow-domain",
            "example.com",
            "--allow-domain=raw.githubusercontent.com",
        ]
    )
    assert len(settings.paths.roots) == 2
    assert settings.hosts.domains == ("example.com", "raw.githubusercontent.com")


def test_requires_at_least_one_allow_path(tmp_path: Path) -> None:
    # Differs on purpose: without --allow-path the server takes its folders from the client's MCP
    # roots (tests/md_vision/test_conventions.py); until then no local path is allowed.
    without = parse_settings(["--allow-domain", "none"], env={})
    assert without.follow_roots and without.paths.roots == ()
    given = parse_settings(["--allow-path", str(tmp_path), "--allow-domain", "none"], env={})
    assert given.paths.roots and not given.follow_roots


def test_requires_at_least_one_allow_domain(tmp_path: Path) -> None:
    # The flag is --allow-host on every docab server; --allow-domain is the same flag.
    with pytest.raises(FlagError, match="--allow-host is required"):
        parse_settings(["--allow-path", str(tmp_path)], env={})
    for value in ("none", "all"):
        assert parse_settings(["--allow-path", str(tmp_path), "--allow-domain", value])


@pytest.mark.parametrize(
    "values", [["all", "example.com"], ["none", "example.com"], ["all", "none"], ["*", "example.com"]]
)
def test_rejects_conflicting_allow_domain_sentinels(tmp_path: Path, values: list[str]) -> None:
    argv = ["--allow-path", str(tmp_path)] + [f"--allow-domain={value}" for value in values]
    with pytest.raises(FlagError, match="must stand alone"):
        parse_settings(argv)


@pytest.mark.parametrize(
    ("value", "allowed"), [('"*"', "any"), ("'*'", "any"), ("*", "any"), ("*.example.com", "suffix")]
)
def test_normalizes_quoted_wildcard_sentinels(tmp_path: Path, value: str, allowed: str) -> None:
    # Issue 18: "*" (quoted, or passed by a JSON config with no shell) is `all`, and *.example.com is
    # example.com, as the reference normalised them; they used to stop the server at start.
    hosts = parse_settings(["--allow-path", str(tmp_path), "--allow-domain", value]).hosts
    if allowed == "any":
        assert hosts.allow_any and hosts.permits_host("docs.example.org")
    else:
        assert hosts.domains == ("example.com",) and hosts.permits_host("docs.example.com")
        assert not hosts.permits_host("badexample.com")


def test_normalized_wildcard_starts_the_server(root: Path) -> None:
    with StdioSession(_params("--allow-path", str(root), "--allow-domain", '"*"')) as started:
        assert {tool.name for tool in started.tools()} == {"read_md_with_images", "index_md"}


def test_detects_shell_glob_expansion_from_an_unquoted_star(tmp_path: Path) -> None:
    # As the reference: several values that look like local files stop the server at start.
    for name in ("package.json", "README.md"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "dist").mkdir()
    repeated = ["--allow-domain", "package.json", "--allow-domain", "README.md", "--allow-domain", "dist"]
    # What a shell makes of `--allow-domain *` here: the first name is the value, the rest stray.
    expanded = ["--allow-domain", *sorted(os.listdir(tmp_path))]
    for flags in (repeated, expanded):
        done = _start("--allow-path", str(tmp_path), *flags, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        assert "expanded by the shell" in done.stderr and "--allow-domain all" in done.stderr
        assert "Traceback" not in done.stderr


def test_enforces_domain_allowlists_with_wildcard_and_none_sentinels(tmp_path: Path) -> None:
    def hosts(value: str):
        return parse_settings(["--allow-path", str(tmp_path), "--allow-domain", value]).hosts

    assert hosts("all").permits_host("docs.example.com")
    assert not hosts("none").allows_urls and hosts("none").describe() == "no hosts (URLs are disabled)"
    scoped = hosts("example.com")
    assert scoped.permits_host("docs.example.com") and not scoped.permits_host("other.test")


# -- html-images.test -------------------------------------------------------------------------


def test_detects_img_tags_in_html_strings() -> None:
    tag = '<img src="images/train.svg" alt="Train" width="1200"/>'
    (image,) = parse_document(tag + "\n").images
    assert (image.target, image.alt, image.syntax, image.line) == ("images/train.svg", "Train", "html", 1)


def test_splits_html_around_img_tags(session: StdioSession, folder: Path) -> None:
    # Deliberate difference: the image follows the line that holds its tag (the source stays whole)
    # instead of splitting the HTML at the tag.
    (folder / "a.png").write_bytes(PNG)
    (folder / "doc.md").write_text('<p>before</p><img src="a.png"/><p>after</p>\n')
    result = read(session, folder / "doc.md")
    assert kinds(result) == ["text", "text", "image"] and roles(result) == ["source", "label", "image"]
    assert texts(result)[0] == '<p>before</p><img src="a.png"/><p>after</p>\n'


def test_splits_markdown_with_html_img_tags_for_inlining(session: StdioSession, folder: Path) -> None:
    (folder / "chart.svg").write_text(SVG)
    source = '# Example\n\n*caption*\n\n<img src="./chart.svg" alt="Chart" width="400"/>\n\nTail.\n'
    (folder / "doc.md").write_text(source)
    result = read(session, folder / "doc.md")
    assert roles(result) == ["source", "label", "image", "source"]
    assert "*caption*" in texts(result)[0] and "<img" in texts(result)[0]  # the tag stays in the source
    assert texts(result)[-1] == "\nTail.\n"


# -- http-text.test (remote markdown through the server) ---------------------------------------


def _remote_read(session: StdioSession, remote: LocalServer, path: str, reply: Reply) -> CallToolResult:
    remote.route(path, reply)
    return read(session, remote.url(path))


def test_parses_media_types_without_parameters(session: StdioSession, remote: LocalServer) -> None:
    upper = _remote_read(session, remote, "/upper.md", Reply(body="# Upper\n", content_type="TEXT/PLAIN"))
    html = _remote_read(
        session, remote, "/param.md", Reply(body="<p>x</p>", content_type="text/html; charset=utf-8")
    )
    assert upper.is_error is False and texts(upper) == ["# Upper\n"]
    assert html.is_error is True and "HTML page" in texts(html)[0]


@pytest.mark.parametrize("content_type", ["text/plain", "text/markdown", "application/octet-stream"])
def test_accepts_plain_text_and_markdown_bodies(
    session: StdioSession, remote: LocalServer, content_type: str
) -> None:
    path = f"/accept-{content_type.replace('/', '-')}.md"
    result = _remote_read(session, remote, path, Reply(body="# Title\n\nBody\n", content_type=content_type))
    assert result.is_error is False and texts(result) == ["# Title\n\nBody\n"]


def test_rejects_html_content_types(session: StdioSession, remote: LocalServer) -> None:
    result = _remote_read(session, remote, "/page.md", Reply(body="<html></html>", content_type="text/html"))
    assert result.is_error is True
    assert "returned an HTML page, not markdown" in texts(result)[0] and "raw markdown" in texts(result)[0]


def test_rejects_html_bodies_when_content_type_is_missing_or_misleading(
    session: StdioSession, remote: LocalServer
) -> None:
    missing = _remote_read(
        session,
        remote,
        "/none.md",
        Reply(body="<!DOCTYPE html><html><body>Hi</body></html>", content_type=None),
    )
    misleading = _remote_read(
        session, remote, "/plain.md", Reply(body="<html><body>Hi</body></html>", content_type="text/plain")
    )
    for result in (missing, misleading):
        assert result.is_error is True and "HTML page" in texts(result)[0]


def test_does_not_treat_markdown_containing_html_snippets_as_html(
    session: StdioSession, remote: LocalServer
) -> None:
    body = "# Example\n\n```html\n<html><body>ignored</body></html>\n```\n"
    result = _remote_read(session, remote, "/snippet.md", Reply(body=body, content_type="text/plain"))
    assert result.is_error is False and texts(result) == [body]
    commented = _remote_read(
        session, remote, "/comment.md", Reply(body="<!-- note -->\n# T\n", content_type=None)
    )
    assert commented.is_error is False  # and one that starts with a comment (reference weak point 8)


# -- indexing.test (the library) --------------------------------------------------------------


def test_indexes_markdown_text_with_frontmatter_and_heading_rows() -> None:
    index = index_markdown_text(DOCUMENT, "docs/harbour.md")
    assert index.path == "docs/harbour.md"
    # Deliberate difference: the record holds the YAML between the fences (the index text shows them).
    assert index.frontmatter == "title: Harbour guide\n"
    assert index.line_count == DOCUMENT.count("\n") and index.char_count == len(DOCUMENT)
    assert [row.heading for row in index.rows] == ["# Harbour", "## Moorings", "## Fees"]
    assert index.rows[0].image_count == 1


def test_indexes_a_local_markdown_file(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n\n## Setup\n")
    index = index_markdown_file(path)
    assert index.path == str(path.resolve()) and [row.heading for row in index.rows] == [
        "# Guide",
        "## Setup",
    ]


def test_indexes_a_local_folder_in_stable_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# B\n")
    (tmp_path / "a.md").write_text("---\ntitle: A\n---\n\n# A\n\n```md\n## Ignored\n```\n\n## A child\n")
    files = index_markdown_folder(tmp_path)
    assert [Path(str(file.path)).name for file in files] == ["a.md", "b.md"]
    first = files[0]
    assert not isinstance(first, str) and first.frontmatter == "title: A\n"
    assert [row.heading for row in first.rows] == ["# A", "## A child"]


def test_rejects_directories_passed_to_index_markdown_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a regular file"):
        index_markdown_file(tmp_path)


def test_rejects_files_passed_to_index_markdown_folder(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Doc\n")
    with pytest.raises(ValueError, match="is not a directory"):
        index_markdown_folder(tmp_path / "doc.md")


# -- markdown.test (the document model) -------------------------------------------------------


def test_preserves_frontmatter_through_the_pipeline(session: StdioSession, folder: Path) -> None:
    (folder / "doc.md").write_text(DOCUMENT)
    (folder / "map.png").write_bytes(PNG)
    document = parse_document(DOCUMENT)
    assert document.frontmatter is not None and document.frontmatter.text == "title: Harbour guide\n"
    full = read(session, folder / "doc.md")
    assert texts(full)[0].startswith("---\ntitle: Harbour guide\n---\n")  # byte for byte in full reads


def test_selects_exact_heading_sections_and_discovers_images() -> None:
    document = parse_document(DOCUMENT)
    selection = select(document, section="## Moorings")
    text = document.lines(selection.first, selection.last)
    assert text.startswith("## Moorings") and "## Fees" not in text
    assert document.images_between(selection.first, selection.last) == []


def test_selects_inclusive_line_ranges() -> None:
    document = parse_document(DOCUMENT)
    selection = select(document, line_range=[5, 7])
    assert "# Harbour" in document.lines(selection.first, selection.last)
    assert len(document.images_between(selection.first, selection.last)) == 1


def test_indexes_headings_while_ignoring_headings_inside_fenced_code_blocks() -> None:
    rows = index_document(parse_document(DOCUMENT)).rows
    assert [row.heading for row in rows] == ["# Harbour", "## Moorings", "## Fees"]
    assert rows[0].image_count == 1


def test_returns_a_useful_error_for_missing_exact_sections_without_line_range() -> None:
    document = parse_document(DOCUMENT)
    # Deliberate difference: matching is tolerant, so "Moorings" (no marker) finds "## Moorings" and
    # says so; a heading that is not there is an error naming the closest ones and index_md.
    tolerant = select(document, section="Moorings")
    assert document.lines(tolerant.first, tolerant.first) == "## Moorings\n" and tolerant.notes
    with pytest.raises(SelectionError, match="not found") as failure:
        select(document, section="## Anchorage", name="harbour.md")
    assert "index_md" in str(failure.value)


def test_falls_back_to_line_range_when_section_is_not_found() -> None:
    document = parse_document(DOCUMENT)
    selection = select(document, section="## Missing", line_range=[5, 7])
    assert "# Harbour" in document.lines(selection.first, selection.last)
    assert len(document.images_between(selection.first, selection.last)) == 1
    assert "was not found" in selection.notes[0]  # and it says so


def test_parses_markdown_with_gfm_constructs() -> None:
    document = parse_document("- [x] done\n\n| a |\n| - |\n| b |\n")
    assert document.line_count == 5 and document.headings == ()  # the table is no setext heading


def test_exposes_resolvable_image_urls_but_not_inline_data_uris(
    session: StdioSession, folder: Path, remote: LocalServer
) -> None:
    (folder / "chart.png").write_bytes(PNG)
    remote.route("/long.png", Reply(body=PNG, content_type="image/png"))
    long_url = remote.url("/long.png") + "?q=" + "a" * 600  # over 512 characters: no label
    data = "data:image/png;base64," + base64.b64encode(PNG).decode()
    (folder / "doc.md").write_text(f"![a](chart.png)\n\n![b]({data})\n\n![c]({long_url})\n")
    result = read(session, folder / "doc.md")
    assert kinds(result).count("image") == 3
    labels = [
        block.text for block, role in zip(result.content, roles(result), strict=True) if role == "label"
    ]
    assert len(labels) == 1 and labels[0].startswith(f"Image: {folder / 'chart.png'} (2x2 PNG")


def test_splits_markdown_into_text_and_image_segments_in_document_order(
    session: StdioSession, folder: Path
) -> None:
    (folder / "logo.png").write_bytes(PNG)
    (folder / "doc.md").write_text("# Intro\n\n![logo](./logo.png)\n\n## Next\n")
    result = read(session, folder / "doc.md")
    assert roles(result) == ["source", "label", "image", "source"]
    assert texts(result)[0] == "# Intro\n\n![logo](./logo.png)\n" and texts(result)[-1] == "\n## Next\n"


# -- server.test ------------------------------------------------------------------------------


def test_registers_the_planned_mcp_tools_when_access_flags_are_set(session: StdioSession) -> None:
    assert {tool.name for tool in session.tools()} == {"read_md_with_images", "index_md"}


def test_fails_to_start_without_allow_path(tmp_path: Path) -> None:
    # Differs on purpose: a server without --allow-path starts and follows its client's roots;
    # a client without roots can read no local file, and is told how to allow one.
    with StdioSession(_params("--allow-domain", "none")) as started:
        refused = started.call("read_md_with_images", {"uri": str(tmp_path / "doc.md")})
    assert refused.is_error and "--allow-path DIR (or MD_VISION_ALLOW_PATHS)" in refused.content[0].text


def test_fails_to_start_without_allow_domain(tmp_path: Path) -> None:
    done = _start("--allow-path", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "--allow-host is required" in done.stderr


# -- tools.test (the tool handlers, through the server) ----------------------------------------


def test_inlines_images_referenced_with_html_img_tags(session: StdioSession, folder: Path) -> None:
    (folder / "diagram.png").write_bytes(PNG)
    (folder / "doc.md").write_text(
        '# HTML image\n\n<img src="./diagram.png" alt="diagram" width="400"/>\n\nDone.\n'
    )
    result = read(session, folder / "doc.md")
    assert result.is_error is False and kinds(result).count("image") == 1
    # Deliberate difference: the <img> tag stays in the source text and a label block precedes the
    # image (the reference dropped the tag and put the URL into the text before it).
    assert roles(result) == ["source", "label", "image", "source"]
    assert "<img" in texts(result)[0] and "Done." in texts(result)[-1]


def test_reads_markdown_and_inlines_local_raster_images(session: StdioSession, folder: Path) -> None:
    (folder / "pixel.png").write_bytes(PNG)
    (folder / "second.png").write_bytes(PNG)
    (folder / "doc.md").write_text("# Images\n\n![pixel](./pixel.png)\n\n![second](./second.png)\n")
    result = read(session, folder / "doc.md")
    assert roles(result) == ["source", "label", "image", "source", "label", "image"]
    labels = [text for text in texts(result) if text.startswith("Image: ")]
    assert "pixel.png" in labels[0] and "second.png" in labels[1]


def test_inlines_local_svg_images(session: StdioSession, folder: Path) -> None:
    (folder / "vector.svg").write_text(SVG)
    (folder / "doc.md").write_text("# Vector\n\n![vector](./vector.svg)\n")
    result = read(session, folder / "doc.md")
    assert kinds(result) == ["text", "text", "image"] and "vector.svg" in texts(result)[1]
    assert result.content[2].mime_type == "image/png"


def test_interleaves_an_early_image_before_trailing_markdown(session: StdioSession, folder: Path) -> None:
    (folder / "chart.png").write_bytes(PNG)
    (folder / "doc.md").write_text(
        "# Title\n\nIntro paragraph.\n\n![chart](./chart.png)\n\n## Later\n\nTail text.\n"
    )
    result = read(session, folder / "doc.md")
    image = kinds(result).index("image")
    assert "chart.png" in result.content[image - 1].text
    assert result.content[-1].type == "text" and "## Later" in result.content[-1].text


def test_honors_max_images(session: StdioSession, folder: Path) -> None:
    (folder / "a.png").write_bytes(PNG)
    (folder / "b.png").write_bytes(PNG)
    (folder / "doc.md").write_text("# Images\n\n![a](./a.png)\n\n![b](./b.png)\n")
    result = read(session, folder / "doc.md", max_images=1)
    assert kinds(result).count("image") == 1 and "![b](./b.png)" in "".join(texts(result))


def test_returns_mcp_tool_errors_for_missing_sections_without_line_range(
    session: StdioSession, folder: Path
) -> None:
    (folder / "doc.md").write_text("# Present\n")
    result = read(session, folder / "doc.md", section="## Missing")
    assert result.is_error is True and kinds(result) == ["text"]
    assert "not found" in texts(result)[0] and "index_md" in texts(result)[0]


def test_falls_back_to_line_range_when_section_is_not_found_through_the_server(
    session: StdioSession, folder: Path
) -> None:
    (folder / "doc.md").write_text("# Present\n\nBody.\n")
    result = read(session, folder / "doc.md", section="## Missing", line_range=[1, 1])
    assert result.is_error is False
    assert roles(result) == ["note", "source"] and texts(result)[1] == "# Present\n"


def test_rejects_file_uris(session: StdioSession, folder: Path) -> None:
    (folder / "doc.md").write_text("# Doc\n")
    result = read(session, f"file://{folder / 'doc.md'}")
    assert result.is_error is True and "file:// URIs are not accepted" in texts(result)[0]


def test_indexes_a_local_folder_in_stable_order_with_frontmatter_and_tsv_rows(
    session: StdioSession, folder: Path
) -> None:
    (folder / "b.md").write_text("# B\n")
    (folder / "a.md").write_text("---\ntitle: A\n---\n\n# A\n\n```md\n## Ignored\n```\n\n## A child\n")
    result = session.call("index_md", {"uri": str(folder)})
    text = texts(result)[0]
    assert result.is_error is False and text.index("a.md") < text.index("b.md")
    assert "---\ntitle: A\n---" in text and "heading\tline_start\tn_images\tchar_count" in text
    assert "# A\t5\t0\t" in text and "## Ignored" not in text
    assert result.meta[META_KEY]["next_cursor"] is None  # a small folder: one result, as before


def test_reads_remote_svg_images_when_content_is_sniffed_as_application_xml(
    session: StdioSession, remote: LocalServer
) -> None:
    remote.route(
        "/svgdoc/doc.md",
        Reply(body='# Remote\n\n<img src="./chart.svg" alt="chart"/>\n', content_type="text/plain"),
    )
    remote.route("/svgdoc/chart.svg", Reply(body=SVG, content_type="application/xml"))
    result = read(session, remote.url("/svgdoc/doc.md"))
    assert result.is_error is False and kinds(result).count("image") == 1


def test_reads_remote_markdown_and_images(session: StdioSession, remote: LocalServer) -> None:
    remote.route("/pngdoc/doc.md", Reply(body="# Remote\n\n![r](./r.png)\n", content_type="text/plain"))
    remote.route("/pngdoc/r.png", Reply(body=PNG, content_type="image/png"))
    result = read(session, remote.url("/pngdoc/doc.md"))
    assert kinds(result).count("image") == 1
    assert texts(result)[1].startswith(f"Image: {remote.url('/pngdoc/r.png')} (")


def test_omits_long_data_uri_text_before_inlined_images(session: StdioSession, folder: Path) -> None:
    encoded = quote(SVG, safe="")
    assert len(encoded) > 200  # shorter data URIs stay in the text (cheaper than a placeholder)
    (folder / "doc.md").write_text(f"# Inline\n\n![vector](data:image/svg+xml,{encoded})\n")
    result = read(session, folder / "doc.md")
    text = "\n".join(texts(result))
    assert any(kind == "image" for kind in kinds(result)) and encoded not in text
    # Deliberate difference: a placeholder block keeps the media type and names the image block.
    assert "data:image/svg+xml,… [" in text and ": image 1 of this result]" in text
    assert roles(result) == ["source", "data-uri", "source", "image"]


def test_rejects_remote_html_responses_for_markdown_urls(session: StdioSession, remote: LocalServer) -> None:
    remote.route(
        "/viewer.md",
        Reply(body="<!DOCTYPE html><html><body><h1>Viewer</h1></body></html>", content_type=HTML_TYPE),
    )
    result = read(session, remote.url("/viewer.md"))
    assert result.is_error is True and "returned an HTML page, not markdown" in texts(result)[0]


def test_enforces_allowed_local_paths(session: StdioSession, tmp_path: Path) -> None:
    (tmp_path / "hidden.md").write_text("# Hidden\n")
    result = read(session, tmp_path / "hidden.md")
    assert result.is_error is True and "outside the allowed paths" in texts(result)[0]


def test_loads_data_uri_svg_images(session: StdioSession, folder: Path) -> None:
    (folder / "doc.md").write_text(f"![v](data:image/svg+xml,{quote(SVG, safe='')})\n")
    result = read(session, folder / "doc.md")
    images = [block for block in result.content if block.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png" and base64.b64decode(images[0].data)


# -- tool input schemas -----------------------------------------------------------------------


def test_exports_line_range_as_a_fixed_length_integer_array_for_provider_compatibility(
    session: StdioSession,
) -> None:
    (tool,) = [tool for tool in session.tools() if tool.name == "read_md_with_images"]
    schema = tool.input_schema["properties"]["line_range"]
    (array,) = [option for option in schema["anyOf"] if option.get("type") == "array"]
    assert array == {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
    assert "prefixItems" not in str(tool.input_schema)


HTML_TYPE = "text/html; charset=utf-8"
