"""Filesystem tools: confined to the workspace on real paths, with their edges and errors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from docab.agent.toolbox.filesystem import GREP_MAX_MATCHES, Workspace, filesystem_tools
from docab.messages import Image, ToolResult
from tests.harness.corpus import png_bytes, write_document


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_document(root / "document")
    return root


def call(workspace: Path, name: str, **arguments: object) -> ToolResult:
    tools = {t.spec.name: t for t in filesystem_tools(workspace)}
    return asyncio.run(tools[name].call(dict(arguments)))


def test_list_files_shows_workspace_relative_paths_and_sizes(workspace: Path) -> None:
    result = call(workspace, "list_files")
    assert not result.is_error
    lines = result.text.splitlines()
    assert lines[0].startswith("document/document.md\t")
    assert "document/pages/page-0003.png" in result.text
    assert str(workspace) not in result.text  # the real location never leaks


def test_list_files_glob_and_missing_folder(workspace: Path) -> None:
    assert call(workspace, "list_files", pattern="*.png").text.count(".png") == 3
    assert "no files match" in call(workspace, "list_files", pattern="*.docx").text
    missing = call(workspace, "list_files", path="nowhere")
    assert missing.is_error and "no such folder" in missing.text


def test_read_is_line_numbered_with_offset_and_limit(workspace: Path) -> None:
    result = call(workspace, "read_file", path="document/document.md", offset=3, limit=2)
    first, second, footer = result.text.splitlines()
    assert first == "     3\t## Page 1"
    assert second.startswith("     4\t")
    assert footer.startswith("[lines 3-4 of ") and "offset=5" in footer


def test_read_to_the_end_has_no_footer(workspace: Path) -> None:
    total = len((workspace / "document/document.md").read_text().splitlines())
    result = call(workspace, "read_file", path="document/document.md", offset=total, limit=10)
    assert result.text.splitlines() == [
        f"{total:>6}\t" + (workspace / "document/document.md").read_text().splitlines()[-1]
    ]


def test_read_edges_are_errors_that_say_what_to_do(workspace: Path) -> None:
    past = call(workspace, "read_file", path="document/document.md", offset=10_000)
    assert past.is_error and "past the end" in past.text
    folder = call(workspace, "read_file", path="document")
    assert folder.is_error and "list_files" in folder.text
    missing = call(workspace, "read_file", path="document/nope.md")
    assert missing.is_error and "no such file" in missing.text
    bad_limit = call(workspace, "read_file", path="document/document.md", limit=0)
    assert bad_limit.is_error and "limit" in bad_limit.text
    too_big = call(workspace, "read_file", path="document/document.md", limit=5001)
    assert too_big.is_error
    not_int = call(workspace, "read_file", path="document/document.md", offset="3")
    assert not_int.is_error and "integer" in not_int.text
    unknown = call(workspace, "read_file", path="document/document.md", lines=3)
    assert unknown.is_error and "unknown argument" in unknown.text
    no_path = call(workspace, "read_file")
    assert no_path.is_error and "path" in no_path.text


def test_read_an_image_returns_the_image(workspace: Path) -> None:
    result = call(workspace, "read_file", path="document/pages/page-0002.png")
    assert not result.is_error
    assert len(result.images) == 1
    image = result.images[0]
    assert isinstance(image, Image) and image.media_type == "image/png"
    assert image.data == (workspace / "document/pages/page-0002.png").read_bytes()


def test_binary_and_fake_images_are_refused(workspace: Path) -> None:
    (workspace / "document" / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (workspace / "document" / "fake.png").write_text("not an image")
    assert "binary" in call(workspace, "read_file", path="document/blob.bin").text
    fake = call(workspace, "read_file", path="document/fake.png")
    assert fake.is_error and "not a PNG" in fake.text


def test_empty_file(workspace: Path) -> None:
    (workspace / "document" / "empty.md").write_text("")
    result = call(workspace, "read_file", path="document/empty.md")
    assert not result.is_error and "empty" in result.text


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "document/../../outside.txt"])
def test_paths_outside_the_workspace_are_denied(workspace: Path, path: str) -> None:
    (workspace.parent / "outside.txt").write_text("secret")
    result = call(workspace, "read_file", path=path)
    assert result.is_error and "outside the workspace" in result.text
    assert "secret" not in result.text


def test_symlinks_leading_outside_are_denied_and_not_listed(workspace: Path) -> None:
    secret = workspace.parent / "secret"
    secret.mkdir()
    (secret / "answer.md").write_text("the answer is 42")
    os.symlink(secret, workspace / "document" / "link")
    os.symlink(secret / "answer.md", workspace / "document" / "answer-link.md")
    assert call(workspace, "read_file", path="document/link/answer.md").is_error
    assert call(workspace, "read_file", path="document/answer-link.md").is_error
    assert "answer" not in call(workspace, "list_files").text
    assert "no matches" in call(workspace, "grep", pattern="42").text


def test_grep_prints_matches_with_context(workspace: Path) -> None:
    result = call(workspace, "grep", pattern="hermes", ignore_case=True, context=1)
    lines = result.text.splitlines()
    assert any(line.startswith("document/document.md:") and "flagship robot" in line for line in lines)
    assert any(line.startswith("document/document.md-") for line in lines)  # context lines
    assert lines[-1] == "[2 matching lines in 1 file(s)]"


def test_grep_without_context_has_no_separators(workspace: Path) -> None:
    result = call(workspace, "grep", pattern="Page")
    assert "--" not in result.text.splitlines()
    assert all(":" in line for line in result.text.splitlines()[:-1])


def test_grep_match_cap_and_glob(workspace: Path) -> None:
    capped = call(workspace, "grep", pattern=".", max_matches=3)
    assert capped.text.count("document/document.md:") == 3
    assert "max_matches=3" in capped.text
    assert call(workspace, "grep", pattern="x", max_matches=GREP_MAX_MATCHES + 1).is_error
    assert "no matches" in call(workspace, "grep", pattern="Hermes", glob="*.txt").text


def test_grep_bad_regex_is_a_clear_error(workspace: Path) -> None:
    result = call(workspace, "grep", pattern="revenue (2022")
    assert result.is_error
    assert "invalid regular expression" in result.text and "position" in result.text


def test_grep_skips_images(workspace: Path) -> None:
    (workspace / "document" / "pages" / "page-0009.png").write_bytes(png_bytes() + b"Hermes")
    result = call(workspace, "grep", pattern="Hermes")
    assert ".png" not in result.text


def test_workspace_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        Workspace.at(tmp_path / "missing")
