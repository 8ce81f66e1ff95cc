"""The docab run / demo / merge commands: clear one-line errors, no tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from docab.cli.main import main


def fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_run_with_a_missing_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = fails(["run", str(tmp_path / "nope.toml")], capsys)
    assert err.startswith("docab run: error: config file") and "shipped configs" in err


def test_run_with_a_bad_config_names_the_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\n[model]\nname = "baseline/keyword"\n[[arms]]\nname = "a"\nmcp_servers = ["md"]\n'
    )
    err = fails(["run", str(bad)], capsys)
    assert "arms[0] (a) uses MCP server 'md'" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shard", "3/2"], "--shard"),
        (["--shard", "x"], "--shard"),
        (["--limit", "0"], "--limit"),
        (["--epochs", "0"], "--epochs"),
    ],
)
def test_run_flag_errors(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert message in fails(["run", "demo", *flags], capsys)


def test_merge_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = fails(["merge", str(tmp_path), "--out", str(tmp_path / "out")], capsys)
    assert "not a run folder" in err


def test_commands_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("run", "demo", "merge"))


@pytest.mark.parametrize("command", ["demo", "report", "run", "convert", "calibrate", "export"])
def test_an_unknown_flag_shows_the_commands_own_usage(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    given = {"report": ["x"], "run": ["x"], "export": ["x"], "convert": ["x", "--out", "y"]}.get(command, [])
    assert main([command, *given, "--bogus"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"usage: docab {command} ")
        and f"docab {command}: error: unrecognized arguments: --bogus" in err
    )


def test_an_unknown_flag_before_a_command_shows_the_top_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 2
    assert "docab: error: unrecognized arguments: --bogus" in capsys.readouterr().err
