"""mcpguard's pure parts: address classes, path containment on real paths, host allow-lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from docab_mcpguard import AddressClass, HostDenied, HostPolicy, PathDenied, PathPolicy, classify_address


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("8.8.8.8", AddressClass.PUBLIC),
        ("2606:4700:4700::1111", AddressClass.PUBLIC),
        ("127.0.0.1", AddressClass.LOOPBACK),
        ("127.8.9.10", AddressClass.LOOPBACK),
        ("::1", AddressClass.LOOPBACK),
        ("10.1.2.3", AddressClass.PRIVATE),
        ("172.16.0.1", AddressClass.PRIVATE),
        ("192.168.1.1", AddressClass.PRIVATE),
        ("fd12:3456::1", AddressClass.PRIVATE),
        ("169.254.10.10", AddressClass.LINK_LOCAL),
        ("fe80::1", AddressClass.LINK_LOCAL),
        ("169.254.169.254", AddressClass.METADATA),
        ("fd00:ec2::254", AddressClass.METADATA),
        ("100.100.100.200", AddressClass.METADATA),
        ("100.64.0.1", AddressClass.SHARED),
        ("0.0.0.0", AddressClass.UNSPECIFIED),
        ("::", AddressClass.UNSPECIFIED),
        ("224.0.0.1", AddressClass.MULTICAST),
        ("240.0.0.1", AddressClass.RESERVED),
        # IPv6 forms that smuggle an internal IPv4 address are judged by the embedded address.
        ("::ffff:127.0.0.1", AddressClass.LOOPBACK),
        ("::ffff:169.254.169.254", AddressClass.METADATA),
        ("64:ff9b::a00:1", AddressClass.PRIVATE),
        ("2002:7f00:1::", AddressClass.LOOPBACK),
    ],
)
def test_classify_address(address: str, expected: AddressClass) -> None:
    assert classify_address(address) is expected


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (root / "docs" / "a.md").write_text("# A")
    (root / "escape").symlink_to(outside)
    (root / "docs" / "link.md").symlink_to(outside / "secret.md")
    (root / "inner").symlink_to(root / "docs")
    return {"root": root, "outside": outside}


def test_path_inside_root_resolves_to_real_path(tree: dict[str, Path]) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    assert policy.resolve(str(tree["root"] / "docs" / "a.md")) == (tree["root"] / "docs" / "a.md").resolve()
    # A symlink that stays inside the root is fine and is reported by its real path.
    assert policy.resolve(str(tree["root"] / "inner" / "a.md")) == (tree["root"] / "docs" / "a.md").resolve()


def test_relative_paths_resolve_against_first_root(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    monkeypatch.chdir(tree["outside"])  # the working directory must not matter
    assert policy.resolve("docs/a.md") == (tree["root"] / "docs" / "a.md").resolve()


@pytest.mark.parametrize(
    "relative", ["escape/secret.md", "docs/link.md", "../outside/secret.md", "docs/../../outside/secret.md"]
)
def test_escapes_are_refused(tree: dict[str, Path], relative: str) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    with pytest.raises(PathDenied, match="outside the allowed paths"):
        policy.resolve(str(tree["root"] / relative))


def test_link_dotdot_that_lands_inside_is_judged_on_where_it_lands(tree: dict[str, Path]) -> None:
    # root/escape -> outside, so root/escape/.. is tmp_path and tmp_path/root/docs/a.md is inside.
    policy = PathPolicy.from_dirs([tree["root"]])
    assert (
        policy.resolve(str(tree["root"] / "escape" / ".." / "root" / "docs" / "a.md"))
        == (tree["root"] / "docs" / "a.md").resolve()
    )


def test_link_dotdot_is_resolved_before_containment(tree: dict[str, Path]) -> None:
    # root/escape -> outside; root/escape/.. is the parent of outside, not root.
    policy = PathPolicy.from_dirs([tree["root"]])
    with pytest.raises(PathDenied):
        policy.resolve(str(tree["root"] / "escape" / ".." / "outside" / "secret.md"))


def test_prefix_sibling_is_not_inside(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs-private").mkdir()
    policy = PathPolicy.from_dirs([tmp_path / "docs"])
    with pytest.raises(PathDenied):
        policy.resolve(str(tmp_path / "docs-private" / "x.md"))


def test_file_uris_and_nul_are_refused(tree: dict[str, Path]) -> None:
    policy = PathPolicy.from_dirs([tree["root"]])
    with pytest.raises(PathDenied, match="file: URIs"):
        policy.resolve(f"file://{tree['root']}/docs/a.md")
    with pytest.raises(PathDenied, match="NUL"):
        policy.resolve("docs/a\x00.md")


def test_from_dirs_startup_errors(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ValueError, match="does not exist"):
        PathPolicy.from_dirs([tmp_path / "missing"])
    with pytest.raises(ValueError, match="not a directory"):
        PathPolicy.from_dirs([tmp_path / "f.txt"])
    with pytest.raises(ValueError, match="at least one"):
        PathPolicy.from_dirs([])


def test_host_suffix_matching() -> None:
    policy = HostPolicy.build(domains=["example.com"])
    assert policy.permits_host("example.com")
    assert policy.permits_host("docs.example.com")
    assert policy.permits_host("Docs.Example.COM.")
    assert not policy.permits_host("badexample.com")
    assert not policy.permits_host("example.com.evil.net")
    assert not HostPolicy.build().allows_urls


def test_check_url_refuses_bad_schemes_and_credentials() -> None:
    policy = HostPolicy.build(allow_any=True)
    for url, message in [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.com/x", "only http and https"),
        ("http://user:pw@example.com/", "credentials"),
        ("http:///nohost", "no host"),
        # The socket layer raised OverflowError past 65535: an internal error, not a refusal.
        ("http://127.0.0.1:99999/doc.md", "port 99999, outside 1-65535"),
        ("https://example.com:65536/", "port 65536, outside"),
        ("http://example.com:0/", "port 0, outside"),
    ]:
        with pytest.raises(HostDenied, match=message):
            policy.check_url(url)
    assert policy.check_url("https://example.com/a").host == "example.com"
    assert policy.check_url("https://example.com:65535/a").port == 65535


def test_internal_addresses_need_an_exact_host() -> None:
    policy = HostPolicy.build(allow_any=True, internal_hosts=["localhost"])
    policy.check_address("localhost", "127.0.0.1")
    policy.check_address("example.com", "93.184.216.34")
    with pytest.raises(HostDenied, match="loopback"):
        policy.check_address("evil.example.com", "127.0.0.1")
    with pytest.raises(HostDenied, match="cloud metadata"):
        policy.check_address("169.254.169.254", "169.254.169.254")
