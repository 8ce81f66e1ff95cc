"""Folder index: what is skipped, order, caps, caching by (real path, size, mtime), worker pools."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from docab_mcpguard import PathPolicy
from md_vision.folder import index_many, parser_pool, scan_folder
from md_vision.index import FileIndex
from md_vision.service import MdVision, ToolFailure
from tests.md_vision.conftest import index, run, settings_for


def _tree(root: Path) -> None:
    files = {
        "b.md": "# B\n",
        "A.MD": "# A upper\n",
        "c.Markdown": "# C\n",
        "notes.txt": "# not markdown\n",
        ".hidden.md": "# hidden file\n",
        ".git/x.md": "# in .git\n",
        "node_modules/pkg/README.md": "# dependency\n",
        "build/out.md": "# ignored by .gitignore\n",
        "sub/keep.md": "# kept\n",
        "sub/drop.md": "# ignored by nested .gitignore\n",
        "sub/deeper/again.md": "# re-included\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".gitignore").write_text("build/\nagain.md\n")
    (root / "sub" / ".gitignore").write_text("drop.md\n")
    (root / "sub" / "deeper" / ".gitignore").write_text("!again.md\n")


def _names(result) -> list[str]:
    return [Path(entry.path).name for entry in result.entries]


def test_scan_skips_hidden_node_modules_and_gitignored_and_sorts(tmp_path: Path) -> None:
    _tree(tmp_path)
    result = index(settings_for(tmp_path), str(tmp_path))
    assert _names(result) == ["A.MD", "b.md", "c.Markdown", "again.md", "keep.md"]
    assert result.text.count("<file ") == 5 and "\n\n<file " in result.text


def test_symlink_leading_outside_is_skipped_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.md").write_text("# in\n")
    (tmp_path / "out.md").write_text("# out\n")
    os.symlink(tmp_path / "out.md", root / "link.md")
    result = index(settings_for(root), str(root))
    assert _names(result) == ["in.md"]
    assert "symlinks leading outside" in result.text


def test_file_cap_is_applied_in_sorted_order_with_a_message(tmp_path: Path) -> None:
    for number in range(5):
        (tmp_path / f"f{number}.md").write_text(f"# {number}\n")
    result = index(settings_for(tmp_path, max_folder_files=3), str(tmp_path))
    assert _names(result) == ["f0.md", "f1.md", "f2.md"]
    assert (
        result.text.startswith("Note: ")
        and "holds 5 markdown files" in result.text
        and "--max-files 3" in result.text
    )


def test_empty_folder_is_an_actionable_error(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.md").write_text("# x\n")
    with pytest.raises(ToolFailure, match="no markdown files"):
        index(settings_for(tmp_path), str(tmp_path))


def test_unreadable_file_is_listed_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# ok\n")
    (tmp_path / "bin.md").write_bytes(b"\0\0")
    result = index(settings_for(tmp_path), str(tmp_path))
    assert 'error="' in result.text and "binary" in result.text and "# ok\t1" in result.text


def test_index_is_cached_by_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text("# One\n")

    async def go():
        async with MdVision(settings_for(tmp_path)) as vision:
            first = await vision.index(str(tmp_path))
            again = await vision.index(str(tmp_path))
            path.write_text("# Two\n## Three\n")
            changed = await vision.index(str(tmp_path))
            return first, again, changed

    first, again, changed = run(go())
    assert first.entries[0] is again.entries[0]  # served from the cache, not re-parsed
    assert [row.heading for row in changed.entries[0].rows] == ["# Two", "## Three"]


def test_many_files_go_through_a_pool_in_order(tmp_path: Path) -> None:
    paths = []
    for number in range(60):
        path = tmp_path / f"d{number:02d}.md"
        path.write_text(f"# Doc {number}\n## Part\n")
        paths.append(path)
    with ThreadPoolExecutor(2) as pool:
        pooled = index_many(paths, 10_000, pool, policy=policy_for(tmp_path))
    assert [entry.rows[0].heading for entry in pooled if isinstance(entry, FileIndex)] == [
        f"# Doc {number}" for number in range(60)
    ]
    assert pooled == index_many(paths, 10_000, None, policy=policy_for(tmp_path))


def test_worker_pool_through_the_service_matches_one_at_a_time(tmp_path: Path) -> None:
    for number in range(50):
        (tmp_path / f"d{number:02d}.md").write_text(f"# Doc {number}\n![i](i{number}.png)\n")
    pooled = index(settings_for(tmp_path, index_workers=3), str(tmp_path))
    serial = index(settings_for(tmp_path, index_workers=1), str(tmp_path))
    assert len(pooled.entries) == 50 and pooled.entries[-1].rows[0].heading == "# Doc 49"
    assert pooled.text == serial.text


def test_parser_pool_is_processes_from_a_forkserver_and_gives_the_same_index(tmp_path: Path) -> None:
    paths = []
    for number in range(40):
        path = tmp_path / f"d{number:02d}.md"
        path.write_text(f"# Doc {number}\n\n![fig](f{number}.png)\n\n## Part\n")
        paths.append(path)
    pool = parser_pool(2)
    try:
        assert isinstance(pool, ProcessPoolExecutor)
        assert pool._mp_context.get_start_method() == "forkserver"  # never forked from a threaded server
        assert index_many(paths, 10_000, pool, policy=policy_for(tmp_path)) == index_many(
            paths, 10_000, None, policy=policy_for(tmp_path)
        )
    finally:
        pool.shutdown()


def policy_for(folder: Path) -> PathPolicy:
    return PathPolicy.from_dirs([folder])


class _DeadPool(Executor):
    """A process pool whose worker died: every map or submit raises BrokenProcessPool."""

    def map(self, *args, **kwargs):
        raise BrokenProcessPool("a worker died")

    def submit(self, *args, **kwargs):
        raise BrokenProcessPool("a worker died")


def test_a_dead_worker_pool_falls_back_to_indexing_here(tmp_path: Path) -> None:
    paths = []
    for number in range(20):
        path = tmp_path / f"d{number:02d}.md"
        path.write_text(f"# Doc {number}\n")
        paths.append(path)
    broken: list[bool] = []
    assert index_many(
        paths, 10_000, _DeadPool(), policy=policy_for(tmp_path), on_broken=lambda: broken.append(True)
    ) == index_many(paths, 10_000, None, policy=policy_for(tmp_path))
    assert broken == [True]  # the owner hears of it, to replace the pool


def test_files_that_cannot_be_read_are_listed_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# ok\n")
    os.mkfifo(tmp_path / "pipe.md")  # reading it would block: never opened
    os.symlink(tmp_path / "gone.md", tmp_path / "broken.md")
    result = index(settings_for(tmp_path), str(tmp_path))
    assert [Path(entry.path).name for entry in result.entries] == ["gone.md", "ok.md", "pipe.md"]
    assert 'gone.md" error="the file cannot be read"' in result.text
    assert 'pipe.md" error="not a regular file"' in result.text


def test_warm_index_reuses_entries_and_notices_each_change(tmp_path: Path) -> None:
    for number in range(30):
        (tmp_path / f"d{number:02d}.md").write_text(f"# Doc {number}\n")

    async def go():
        async with MdVision(settings_for(tmp_path, index_workers=2)) as vision:
            first = await vision.index(str(tmp_path))
            again = await vision.index(str(tmp_path))
            (tmp_path / "d07.md").write_text("# Changed\n## More\n")
            (tmp_path / "d30.md").write_text("# New\n")
            changed = await vision.index(str(tmp_path))
            return first, again, changed

    first, again, changed = run(go())
    assert all(a is b for a, b in zip(first.entries, again.entries, strict=True))
    assert again.text == first.text
    assert [row.heading for row in changed.entries[7].rows] == ["# Changed", "## More"]
    assert changed.entries[6] is first.entries[6] and len(changed.entries) == 31


def test_a_call_while_the_workers_start_parses_here_and_never_waits_for_them(tmp_path: Path) -> None:
    """The server says the workers are coming (expect_warm_up) before their thread starts; a large
    folder indexed before one answers is parsed in this process, with no pool made or waited for.
    Once warm_up() has run and a worker answered, the same folder's changes go to the pool."""
    for number in range(40):
        (tmp_path / f"d{number:02d}.md").write_text(f"# Doc {number}\n")

    async def go():
        async with MdVision(settings_for(tmp_path, index_workers=2)) as vision:
            vision.expect_warm_up()
            early = await vision.index(str(tmp_path))
            made_early = vision._pool._parsers is not None
            vision.warm_up()
            assert vision._pool._warming is not None
            await asyncio.wrap_future(vision._pool._warming)
            for number in range(40):
                (tmp_path / f"d{number:02d}.md").write_text(f"# Changed {number}\n")
            later = await vision.index(str(tmp_path))
            return early, made_early, vision._pool._parsers is not None, later

    early, made_early, made_later, later = run(go())
    assert len(early.entries) == 40 and not made_early
    assert made_later and later.entries[39].rows[0].heading == "# Changed 39"


def test_scan_does_not_follow_directory_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.md").write_text("# x\n")
    os.symlink(tmp_path / "real", tmp_path / "loop")
    policy = policy_for(tmp_path)
    with policy.open(tmp_path) as root:
        scan = scan_folder(root, policy, 100)
    assert [file.path.name for file in scan.files] == ["x.md"]
