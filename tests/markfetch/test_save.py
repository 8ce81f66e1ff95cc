"""savePath: the write sandbox on real paths, and honest save failures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docab_mcpguard import PathPolicy
from markfetch.errors import ErrorCode, MarkfetchError
from markfetch.service import sandboxed_save_path, save_document


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "link-out").symlink_to(outside)  # a link inside the root that points outside
    (root / "sub" / "deep").mkdir()
    (root / "deeplink").symlink_to(root / "sub" / "deep")  # deeplink/.. is root/sub, not root
    (outside / "inner").mkdir()
    (root / "escape").symlink_to(outside / "inner")  # escape/.. is outside, lexically root
    return {"root": root, "outside": outside}


def forbidden(raw: str, policy: PathPolicy) -> str:
    with pytest.raises(MarkfetchError) as info:
        sandboxed_save_path(raw, policy)
    assert info.value.code is ErrorCode.SAVE_FORBIDDEN
    return info.value.message


def test_paths_inside_the_root_resolve_to_real_paths(tree) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    assert (
        sandboxed_save_path(str(tree["root"] / "sub" / "a.md"), policy).path
        == tree["root"].resolve() / "sub" / "a.md"
    )
    assert sandboxed_save_path(str(tree["root"] / "deeplink" / ".." / "b.md"), policy).path == (
        tree["root"].resolve() / "sub" / "b.md"
    )


def test_escapes_are_refused(tree) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    assert "outside the allowed paths" in forbidden(str(tree["outside"] / "a.md"), policy)
    assert "outside the allowed paths" in forbidden(str(tree["root"] / "link-out" / "a.md"), policy)
    assert "outside the allowed paths" in forbidden(str(tree["root"] / "escape" / ".." / "a.md"), policy)
    assert "outside the allowed paths" in forbidden(str(tree["root"] / ".." / "outside" / "a.md"), policy)
    assert "absolute path" in forbidden("relative/a.md", policy)
    assert "absolute path" in forbidden("~/a.md", policy)
    assert "empty" in forbidden("", policy)


def test_a_planted_symlink_file_pointing_outside_is_refused(tree) -> None:
    (tree["root"] / "innocent.md").symlink_to(tree["outside"] / "target.md")
    policy = PathPolicy.from_dirs([tree["root"]])
    forbidden(str(tree["root"] / "innocent.md"), policy)


def test_save_writes_atomically_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "doc.md"
    target.write_text("old")
    assert save_document("# new ✓\n", target) == len("# new ✓\n".encode())
    assert target.read_text(encoding="utf-8") == "# new ✓\n"
    assert [p.name for p in tmp_path.iterdir()] == ["doc.md"]  # no temp file left behind


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda d: d / "missing" / "doc.md", "its folder does not exist"),
        (lambda d: d, "it is a folder"),
    ],
)
def test_save_failures_are_clear(tmp_path: Path, make, reason: str) -> None:
    with pytest.raises(MarkfetchError) as info:
        save_document("x", make(tmp_path))
    assert info.value.code is ErrorCode.SAVE_FAILED and reason in info.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_save_permission_denied(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(MarkfetchError, match="permission denied"):
        save_document("x", locked / "doc.md")
