"""One way to allow hosts and paths: the same words as a flag and a variable, older names still
read, and every refusal naming the setting that lifts it (docab_mcpguard.access)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from docab_mcpguard import HostDenied, HostPolicy, PathDenied, PathPolicy
from docab_mcpguard.access import (
    Given,
    SettingError,
    add_flags,
    flag_values,
    given,
    host_policy,
    path_policy,
    path_remedy,
    server_settings,
    shell_expansion_error,
    switch,
    urls_disabled,
)

MD = server_settings("md-vision", "MD_VISION", host_flags=("--allow-domain",))
FETCH = server_settings("markfetch", "MARKFETCH", path_variables=("MARKFETCH_ALLOWED_WRITE_ROOTS",))


def test_each_setting_has_a_flag_and_a_variable_with_the_same_words() -> None:
    assert (MD.hosts.flag, MD.hosts.variable) == ("--allow-host", "MD_VISION_ALLOW_HOSTS")
    assert (MD.paths.flag, MD.paths.variable) == ("--allow-path", "MD_VISION_ALLOW_PATHS")
    assert (FETCH.structured_output.flag, FETCH.structured_output.variable) == (
        "--structured-output",
        "MARKFETCH_STRUCTURED_OUTPUT",
    )
    assert FETCH.paths.spelled("DIR") == (
        "--allow-path DIR (or MARKFETCH_ALLOW_PATHS, formerly MARKFETCH_ALLOWED_WRITE_ROOTS)"
    )


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser, MD, hosts_help="hosts", paths_help="folders")
    return parser.parse_args(list(argv))


def test_flags_parse_with_the_older_spelling_and_win_over_the_variable() -> None:
    args = _parse("--allow-domain", "a.example", "--allow-host=b.example", "--no-structured-output")
    flags = flag_values(MD.hosts, args)
    assert flags == {"--allow-host": ["b.example"], "--allow-domain": ["a.example"]}
    chosen = given(MD.hosts, flags, {"MD_VISION_ALLOW_HOSTS": "c.example"}, separator=",")
    assert chosen == Given(("b.example", "a.example"), "--allow-host", True)
    only_old = given(MD.hosts, {"--allow-domain": ["a.example"]}, {}, separator=",")
    assert only_old is not None and only_old.source == "--allow-domain"  # messages name what was typed
    assert switch(MD.structured_output, args.structured_output, {"MD_VISION_STRUCTURED_OUTPUT": "1"}) is False


def test_a_variable_is_read_when_no_flag_is_given_and_the_older_name_too() -> None:
    assert given(MD.hosts, {}, {"MD_VISION_ALLOW_HOSTS": "a.example, b.example"}, separator=",") == Given(
        ("a.example", "b.example"), "MD_VISION_ALLOW_HOSTS", False
    )
    old = given(FETCH.paths, {}, {"MARKFETCH_ALLOWED_WRITE_ROOTS": "/a:/b"}, separator=":")
    assert old == Given(("/a", "/b"), "MARKFETCH_ALLOWED_WRITE_ROOTS", False)
    assert given(FETCH.paths, {}, {}, separator=":") is None
    same = {"MARKFETCH_ALLOW_PATHS": "/a", "MARKFETCH_ALLOWED_WRITE_ROOTS": "/a"}
    assert given(FETCH.paths, {}, same, separator=":") == Given(("/a",), "MARKFETCH_ALLOW_PATHS", False)


def test_a_setting_set_under_both_names_to_different_values_is_refused() -> None:
    env = {"MARKFETCH_ALLOW_PATHS": "/a", "MARKFETCH_ALLOWED_WRITE_ROOTS": "/b"}
    with pytest.raises(
        SettingError, match="MARKFETCH_ALLOW_PATHS and MARKFETCH_ALLOWED_WRITE_ROOTS are both set"
    ):
        given(FETCH.paths, {}, env, separator=":")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("on", True), ("TRUE", True), ("yes", True), ("0", False), ("off", False), ("", True)],
)
def test_switch_values(raw: str, expected: bool) -> None:
    assert switch(MD.structured_output, None, {"MD_VISION_STRUCTURED_OUTPUT": raw}) is expected


def test_a_switch_that_is_neither_on_nor_off_names_its_variable() -> None:
    with pytest.raises(SettingError, match="MD_VISION_STRUCTURED_OUTPUT='maybe' is not on or off"):
        switch(MD.structured_output, None, {"MD_VISION_STRUCTURED_OUTPUT": "maybe"})


def test_paths_from_a_variable_must_be_absolute_and_not_empty(tmp_path: Path) -> None:
    relative = Given(("docs",), "MD_VISION_ALLOW_PATHS", False)
    with pytest.raises(SettingError, match="MD_VISION_ALLOW_PATHS entry 'docs' is not an absolute path"):
        path_policy(relative, MD)
    empty = Given((str(tmp_path), ""), "MD_VISION_ALLOW_PATHS", False)
    with pytest.raises(SettingError, match="has an empty entry"):
        path_policy(empty, MD)
    missing = Given((str(tmp_path / "missing"),), "--allow-path", True)
    with pytest.raises(SettingError, match=r"--allow-path '.*missing' does not exist"):
        path_policy(missing, MD)


def test_paths_from_a_flag_may_be_relative_to_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    policy = path_policy(Given(("docs",), "--allow-path", True), MD)
    assert policy.roots == (os.path.realpath(tmp_path / "docs"),)


def test_a_path_refusal_ends_with_the_setting_that_lifts_it(tmp_path: Path) -> None:
    policy = path_policy(Given((str(tmp_path),), "--allow-path", True), MD)
    with pytest.raises(PathDenied) as refused:
        policy.open("/etc/hostname")
    assert str(refused.value).endswith("start md-vision with --allow-path DIR (or MD_VISION_ALLOW_PATHS)")
    with pytest.raises(PathDenied, match="MD_VISION_ALLOW_PATHS"):
        policy.resolve("/etc/hostname")


def test_a_policy_without_roots_refuses_every_path_with_its_remedy() -> None:
    waiting = PathPolicy((), remedy=path_remedy(MD, client_roots=True))
    for path in ("notes.md", "/etc/hostname", "~/x.md"):
        with pytest.raises(PathDenied) as refused:
            waiting.open(path)
        message = str(refused.value)
        assert "no folder is allowed yet" in message and "MCP client's roots" in message
        assert "--allow-path DIR (or MD_VISION_ALLOW_PATHS)" in message
    with pytest.raises(PathDenied):
        waiting.resolve("notes.md")
    assert waiting.describe() == "none"


def test_host_grammar_on_a_server_whose_hosts_are_an_allow_list() -> None:
    def policy(*values: str) -> HostPolicy:
        return host_policy(Given(values, "--allow-host", True), MD, open_by_default=False)

    assert policy("all").allow_any and not policy("none").allows_urls
    scoped = policy("example.com", "127.0.0.1")
    assert scoped.permits_host("docs.example.com") and not scoped.permits_host("badexample.com")
    assert "127.0.0.1" in scoped.internal_hosts and not scoped.allow_any
    assert policy("'*'").allow_any and policy("*.example.com").domains == ("example.com",)
    for values, message in [
        (("all", "example.com"), "--allow-host all must stand alone"),
        (("none", "example.com"), "--allow-host none must stand alone"),
        (("https://example.com",), "is not a host name or IP address"),
        (("example.com:8080",), "without a port"),
        (("docs.*.com",), "a wildcard can only be"),
        (("package.json",), "look like file names"),
    ]:
        with pytest.raises(SettingError, match=message):
            policy(*values)
    with pytest.raises(SettingError, match="--allow-host is required"):
        host_policy(None, MD, open_by_default=False)


def test_host_grammar_on_a_server_open_to_public_hosts() -> None:
    def policy(values: tuple[str, ...] | None) -> HostPolicy:
        return host_policy(
            None if values is None else Given(values, "MARKFETCH_ALLOW_HOSTS", False),
            FETCH,
            open_by_default=True,
        )

    assert policy(None).allow_any and not policy(None).internal_hosts
    local = policy(("localhost", "127.0.0.1", ""))  # an empty entry of a variable is skipped
    assert local.allow_any and local.internal_hosts == frozenset({"localhost", "127.0.0.1"})
    assert policy(("all", "localhost")).internal_hosts == frozenset({"localhost"})  # all is the default
    assert not policy(("none",)).allows_urls


def test_a_host_refusal_ends_with_the_setting_that_lifts_it() -> None:
    scoped = host_policy(Given(("example.com",), "--allow-host", True), MD, open_by_default=False)
    with pytest.raises(HostDenied) as refused:
        scoped.check_url("https://other.example.org/x.md")
    assert str(refused.value).endswith(
        "to allow it, run with --allow-host other.example.org (or MD_VISION_ALLOW_HOSTS)"
    )
    open_policy = host_policy(None, FETCH, open_by_default=True)
    with pytest.raises(HostDenied) as internal:
        open_policy.check_address("localhost", "127.0.0.1")
    assert "loopback" in str(internal.value)
    assert "--allow-host localhost (or MARKFETCH_ALLOW_HOSTS)" in str(internal.value)
    assert "--allow-host HOST (or MD_VISION_ALLOW_HOSTS)" in urls_disabled(MD)


def test_shell_expansion_is_named_for_the_flag_that_was_typed() -> None:
    message = shell_expansion_error(["package.json", "README.md"], flag="--allow-domain")
    assert message is not None and "--allow-domain got 'package.json'" in message
    assert shell_expansion_error(["docs.example.com"]) is None
