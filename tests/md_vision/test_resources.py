"""The allowed markdown files as resources (md_vision.resources): pages at their edge, several
allowed folders, cursors that outlive their folders, reads through the sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from md_vision.resources import ResourceFailure, list_page, read_resource
from tests.md_vision.conftest import settings_for


def _files(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (folder / f"doc{number:03}.md").write_text(f"# {number}\n")


def _all(settings, page_size: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = list_page(settings, cursor, page_size)
        pages.append([item.name for item in page.resources])
        cursor = page.next_cursor
        if cursor is None:
            return pages


@pytest.mark.parametrize(("count", "sizes"), [(10, [10]), (9, [9]), (11, [10, 1]), (0, [0])])
def test_a_page_at_its_edge_has_no_cursor_to_an_empty_page(
    tmp_path: Path, count: int, sizes: list[int]
) -> None:
    _files(tmp_path, count)
    assert [len(page) for page in _all(settings_for(tmp_path), 10)] == sizes


def test_pages_run_across_the_allowed_folders_in_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _files(first / "deep" / "er", 3)
    _files(first, 2)
    _files(second, 4)
    pages = _all(settings_for(first, second), 4)
    assert [len(page) for page in pages] == [4, 4, 1]
    names = [name for page in pages for name in page]
    # Depth first, each folder's entries by name: "deep" comes before "doc000.md".
    assert names[:5] == [
        "deep/er/doc000.md",
        "deep/er/doc001.md",
        "deep/er/doc002.md",
        "doc000.md",
        "doc001.md",
    ]
    assert names[5:] == ["doc000.md", "doc001.md", "doc002.md", "doc003.md"]


def test_a_cursor_from_other_allowed_folders_is_refused(tmp_path: Path) -> None:
    _files(tmp_path / "a", 3)
    _files(tmp_path / "b", 3)
    cursor = list_page(settings_for(tmp_path / "a"), None, 2).next_cursor
    assert cursor is not None
    with pytest.raises(ResourceFailure, match="the allowed folders changed"):
        list_page(settings_for(tmp_path / "b"), cursor, 2)
    with pytest.raises(ResourceFailure, match="not one resources/list gave"):
        list_page(settings_for(tmp_path / "a"), "###", 2)


def test_reads_go_through_the_sandbox(tmp_path: Path) -> None:
    inside, outside = tmp_path / "in", tmp_path / "out"
    _files(inside, 1)
    _files(outside, 1)
    os.symlink(outside / "doc000.md", inside / "link.md")
    settings = settings_for(inside)
    path, text = read_resource(settings, (inside / "doc000.md").as_uri())
    assert text == "# 0\n" and path == (inside / "doc000.md").resolve()
    for uri, message in [
        ((outside / "doc000.md").as_uri(), "outside the allowed paths"),
        ((inside / "link.md").as_uri(), "outside the allowed paths"),
        ((inside / "missing.md").as_uri(), "does not exist"),
        ("file://otherhost/x.md", "not a file:// URI of this machine"),
    ]:
        with pytest.raises(ResourceFailure, match=message):
            read_resource(settings, uri)
    names = [item.name for item in list_page(settings, None, 10).resources]
    assert names == ["doc000.md"]  # the link leading outside is not listed either
