"""PathPolicy.open and write_file_in: the walk beneath the roots, links, races, and safe writes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from docab_mcpguard import RACE_FREE, PathDenied, PathPolicy, write_file_in
from tests.support.swapper import FolderSwapper

pytestmark = pytest.mark.skipif(not RACE_FREE, reason="the race-free walk needs dir_fd (not on Windows)")


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "docs" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("SECRET")
    (root / "docs" / "a.md").write_text("# A")
    (root / "escape").symlink_to(outside)
    (root / "docs" / "link.md").symlink_to(outside / "secret.md")
    (root / "inner").symlink_to(root / "docs")  # absolute, inside
    (root / "docs" / "rel.md").symlink_to("a.md")  # relative, inside
    (root / "deeplink").symlink_to("docs/deep")  # deeplink/.. is docs, not the root
    return {"root": root.resolve(), "outside": outside.resolve()}


def read(policy: PathPolicy, raw: str) -> tuple[Path, bytes]:
    with policy.open(raw) as opened:
        return opened.path, opened.read(100)


def test_files_inside_open_and_report_their_real_path(tree) -> None:
    root = tree["root"]
    policy = PathPolicy.from_dirs([root])
    assert read(policy, str(root / "docs" / "a.md")) == (root / "docs" / "a.md", b"# A")
    assert read(policy, "docs/a.md") == (root / "docs" / "a.md", b"# A")  # relative: the first root
    assert read(policy, str(root / "inner" / "a.md"))[0] == root / "docs" / "a.md"
    assert read(policy, str(root / "docs" / "rel.md"))[0] == root / "docs" / "a.md"
    assert read(policy, str(root / "deeplink" / ".." / "a.md"))[0] == root / "docs" / "a.md"
    assert read(policy, "./docs/./deep/../a.md")[0] == root / "docs" / "a.md"
    with policy.open(str(root)) as folder:
        assert folder.is_dir and folder.path == root
        assert sorted(entry.name for entry in folder.entries()) == ["deeplink", "docs", "escape", "inner"]


@pytest.mark.parametrize(
    "relative", ["escape/secret.md", "docs/link.md", "../outside/secret.md", "docs/../../outside/secret.md"]
)
def test_escapes_are_refused(tree, relative: str) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    with pytest.raises(PathDenied, match="outside the allowed paths"):
        policy.open(str(tree["root"] / relative))
    with pytest.raises(PathDenied, match="outside the allowed paths"):
        policy.open(relative)


def test_a_root_spelled_through_a_link_is_accepted_both_ways(tree, tmp_path: Path) -> None:
    spelled = tmp_path / "via"
    spelled.symlink_to(tree["root"])
    policy = PathPolicy.from_dirs([spelled])
    assert policy.roots == (str(tree["root"]),)
    assert read(policy, str(spelled / "docs" / "a.md"))[0] == tree["root"] / "docs" / "a.md"
    assert read(policy, str(tree["root"] / "docs" / "a.md"))[1] == b"# A"


def test_a_path_spelled_through_a_link_outside_the_roots_finds_its_root(tree, tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(tree["root"])  # as /tmp is /private/tmp on macOS
    policy = PathPolicy(roots=(str(tree["root"]),))  # built from real paths only: no alias known
    assert read(policy, str(tmp_path / "alias" / "docs" / "a.md")) == (tree["root"] / "docs" / "a.md", b"# A")
    with pytest.raises(PathDenied):  # and a link inside still cannot lead out
        policy.open(str(tmp_path / "alias" / "escape" / "secret.md"))


def test_a_root_prefix_is_compared_by_component(tree, tmp_path: Path) -> None:
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "x.md").write_text("x")
    with pytest.raises(PathDenied):
        PathPolicy.from_dirs([tree["root"]]).open(str(tmp_path / "root2" / "x.md"))


def test_failures_are_os_errors_with_their_errno(tree) -> None:
    root = tree["root"]
    policy = PathPolicy.from_dirs([root])
    with pytest.raises(FileNotFoundError):
        policy.open("docs/missing.md")
    with pytest.raises(NotADirectoryError):
        policy.open("docs/a.md/x")
    (root / "loop").symlink_to("loop")
    with pytest.raises(OSError) as info:
        policy.open("loop")
    assert info.value.errno == errno.ELOOP
    with pytest.raises(OSError) as info:
        policy.open("docs/" + "n" * 300)
    assert info.value.errno == errno.ENAMETOOLONG
    with pytest.raises(PathDenied, match="NUL"):
        policy.open("docs/a\0.md")


def test_a_fifo_opens_without_waiting_and_is_not_a_file(tree) -> None:
    os.mkfifo(tree["root"] / "pipe.md")
    with PathPolicy.from_dirs([tree["root"]]).open("pipe.md") as opened:
        assert not opened.is_file and not opened.is_dir


def test_child_never_follows_a_link(tree) -> None:
    with PathPolicy.from_dirs([tree["root"]]).open(".") as root:
        assert root.child("escape", directory=True) is None
        assert root.child("inner", directory=True) is None
        with root.child("docs", directory=True) as docs:  # type: ignore[union-attr]
            assert docs.child("link.md", directory=False) is None
            with docs.child("a.md", directory=False) as a:  # type: ignore[union-attr]
                assert a.read(10) == b"# A" and a.is_file
        with pytest.raises(PathDenied):
            root.child("../outside", directory=True)


def test_read_stops_at_its_limit(tree) -> None:
    (tree["root"] / "big.md").write_bytes(b"x" * 5000)
    with PathPolicy.from_dirs([tree["root"]]).open("big.md") as opened:
        assert len(opened.read(1001)) == 1001 and opened.info.st_size == 5000


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_written_file_gets_the_mode_of_the_umask(tmp_path: Path, mask: int) -> None:
    previous = os.umask(mask)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        write_file_in(folder, "saved.md", b"text", replace=False)
    finally:
        os.close(folder)
        os.umask(previous)
    assert (tmp_path / "saved.md").stat().st_mode & 0o777 == 0o666 & ~mask
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_write_file_in_creates_and_refuses_to_replace_unless_asked(tmp_path: Path) -> None:
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert write_file_in(folder, "a.md", b"first", replace=False) == 5
        with pytest.raises(FileExistsError):
            write_file_in(folder, "a.md", b"second", replace=False)
        assert (tmp_path / "a.md").read_bytes() == b"first"
        write_file_in(folder, "a.md", b"third", replace=True)
        assert (tmp_path / "a.md").read_bytes() == b"third"
        # The mode a new file gets under the umask, as `open` would give it (the reference writes
        # with Node's writeFile): private only while partial.
        assert (tmp_path / "a.md").stat().st_mode & 0o777 == 0o666 & ~_current_umask()
        (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
        with pytest.raises(FileExistsError):
            write_file_in(folder, "link.md", b"x", replace=False)
        write_file_in(folder, "link.md", b"own", replace=True)  # the link is replaced, not followed
        assert (tmp_path / "a.md").read_bytes() == b"third" and not (tmp_path / "link.md").is_symlink()
        with pytest.raises(OSError) as info:
            write_file_in(folder, "n" * 300, b"x", replace=False)
        assert info.value.errno == errno.ENAMETOOLONG
        (tmp_path / "sub").mkdir()
        with pytest.raises(OSError):
            write_file_in(folder, "sub", b"x", replace=True)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "link.md", "sub"]  # no temp left
    finally:
        os.close(folder)


def test_a_folder_swapped_for_a_link_never_yields_outside_bytes(tree) -> None:
    root, outside = tree["root"], tree["outside"]
    (outside / "a.md").write_text("SECRET")
    policy = PathPolicy.from_dirs([root])
    results = {"inside": 0, "refused": 0, "missing": 0}
    with FolderSwapper(root / "docs", outside) as swapper:
        for _ in range(20_000):  # an open takes microseconds: this spans a few hundred swaps
            try:
                with policy.open("docs/a.md") as opened:
                    data = opened.read(100)
            except PathDenied:
                results["refused"] += 1
                continue
            except FileNotFoundError:
                results["missing"] += 1
                continue
            assert data == b"# A", "bytes from outside the root were read"
            results["inside"] += 1
    assert swapper.swaps > 10
    assert results["inside"] > 0 and results["refused"] > 0, results


def test_the_trust_boundary_a_hardlink_inside_a_root_is_inside(tree) -> None:
    """Issue 26 item 9, the documented boundary: a hard link is a name inside the root for the same
    file, so it reads (whoever can link a file into an allowed root could copy it there too), while
    a symlink to the same file outside is refused. The root folder itself is trusted: swapping it
    is out of scope (the README's security section says so)."""
    root, outside = tree["root"], tree["outside"]
    os.link(outside / "secret.md", root / "docs" / "hard.md")
    policy = PathPolicy.from_dirs([root])
    assert read(policy, str(root / "docs" / "hard.md"))[1] == b"SECRET"
    with pytest.raises(PathDenied):
        read(policy, str(root / "docs" / "link.md"))
