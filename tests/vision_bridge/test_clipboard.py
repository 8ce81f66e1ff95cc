"""The clipboard on each platform, with an injected command runner (no real clipboard needed)."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.llm_stub import LLMStub
from tests.vision_bridge.conftest import png_bytes, settings_for, with_service
from vision_bridge.clipboard import (
    ClipboardReader,
    CommandFailed,
    CommandResult,
    parse_osascript_data,
    pick_image_type,
    run_command,
)
from vision_bridge.errors import VisionError
from vision_bridge.inputs import ImageLoader

PNG = png_bytes((10, 10))


class FakeRunner:
    """Answers commands from a table keyed by the joined argv; records every call."""

    def __init__(self, table: dict[str, CommandResult | Exception]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    async def __call__(self, argv: Sequence[str], *, timeout_s: float, max_output: int) -> CommandResult:
        self.calls.append(list(argv))
        key = " ".join(argv)
        for prefix, result in self.table.items():
            if key.startswith(prefix):
                if isinstance(result, Exception):
                    raise result
                return result
        return CommandResult(1, b"", b"unknown command")


def reader(
    platform: str, table: dict, *, tools: set[str], env: dict[str, str] | None = None
) -> ClipboardReader:
    runner = FakeRunner(table)
    return ClipboardReader(
        platform=platform,
        env=env or {},
        which=lambda name: f"/usr/bin/{name}" if name in tools else None,
        run=runner,
    )


def read(clip: ClipboardReader, max_bytes: int = 1_000_000) -> bytes:
    return asyncio.run(clip.read_image(max_bytes=max_bytes))


def fails(clip: ClipboardReader) -> str:
    with pytest.raises(VisionError) as info:
        read(clip)
    assert info.value.cause.value == "input"
    return info.value.message


def test_macos_reads_png_through_osascript() -> None:
    literal = b"\xc2\xabdata PNGf" + PNG.hex().upper().encode() + b"\xc2\xbb\n"
    clip = reader(
        "darwin",
        {"osascript -e the clipboard as «class PNGf»": CommandResult(0, literal)},
        tools={"osascript"},
    )
    assert read(clip) == PNG


def test_macos_falls_back_to_tiff_and_reports_an_empty_clipboard() -> None:
    tiff = b"II*\x00rest"
    table = {
        "osascript -e the clipboard as «class PNGf»": CommandResult(1, b"", b"Can't make some data (-1700)"),
        "osascript -e the clipboard as «class TIFF»": CommandResult(
            0, b"\xabdata TIFF" + tiff.hex().encode() + b"\xbb"
        ),
    }
    assert read(reader("darwin", table, tools={"osascript"})) == tiff
    empty = reader("darwin", {"osascript": CommandResult(1, b"", b"-1700")}, tools={"osascript"})
    assert "holds no image" in fails(empty)


def test_parse_osascript_data() -> None:
    assert parse_osascript_data("«data PNGf0A0B»".encode()) == b"\n\x0b"
    assert parse_osascript_data(b"some text") is None


def test_windows_reads_base64_png_from_powershell() -> None:
    clip = reader(
        "win32", {"powershell": CommandResult(0, base64.b64encode(PNG) + b"\r\n")}, tools={"powershell"}
    )
    assert read(clip) == PNG
    argv = clip.run.calls[0]  # type: ignore[attr-defined]
    assert argv[:5] == ["powershell", "-NoProfile", "-NonInteractive", "-STA", "-Command"]
    assert "Clipboard]::GetImage()" in argv[5]


def test_windows_empty_clipboard_and_pwsh_fallback() -> None:
    clip = reader("win32", {"pwsh": CommandResult(3, b"")}, tools={"pwsh"})
    assert "holds no image" in fails(clip)
    assert clip.run.calls[0][0] == "pwsh"  # type: ignore[attr-defined]
    assert "needs PowerShell" in fails(reader("win32", {}, tools=set()))


def test_linux_wayland_picks_the_best_image_type() -> None:
    table = {
        "wl-paste --list-types": CommandResult(0, b"text/plain\nimage/jpeg\nimage/png\n"),
        "wl-paste --no-newline --type image/png": CommandResult(0, PNG),
    }
    clip = reader(
        "linux", table, tools={"wl-paste", "xclip"}, env={"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}
    )
    assert read(clip) == PNG


def test_linux_x11_uses_xclip() -> None:
    table = {
        "xclip -selection clipboard -t TARGETS -o": CommandResult(0, b"TARGETS\nimage/png\nUTF8_STRING\n"),
        "xclip -selection clipboard -o -t image/png": CommandResult(0, PNG),
    }
    clip = reader("linux", table, tools={"xclip"}, env={"DISPLAY": ":0"})
    assert read(clip) == PNG


def test_linux_text_only_clipboard_names_what_it_holds() -> None:
    table = {"xclip -selection clipboard -t TARGETS -o": CommandResult(0, b"TARGETS\nUTF8_STRING\n")}
    message = fails(reader("linux", table, tools={"xclip"}, env={"DISPLAY": ":0"}))
    assert "holds no image (it offers: TARGETS, UTF8_STRING)" in message


def test_linux_without_tools_or_session_says_what_to_install() -> None:
    message = fails(reader("linux", {}, tools=set(), env={"DISPLAY": ":0"}))
    assert "wl-paste (package wl-clipboard, Wayland) or xclip (X11)" in message
    assert "no graphical session" in fails(reader("linux", {}, tools={"xclip"}, env={}))


def test_runner_failures_become_input_errors() -> None:
    table = {"xclip": CommandFailed("xclip did not finish within 10 s")}
    assert "did not finish within 10 s" in fails(
        reader("linux", table, tools={"xclip"}, env={"DISPLAY": ":0"})
    )


def test_clipboard_image_over_the_limit() -> None:
    table = {
        "wl-paste --list-types": CommandResult(0, b"image/png\n"),
        "wl-paste --no-newline --type image/png": CommandResult(0, b"x" * 101),
    }
    clip = reader("linux", table, tools={"wl-paste"}, env={"WAYLAND_DISPLAY": "w"})
    with pytest.raises(VisionError, match="over the limit of 100"):
        read(clip, max_bytes=100)


def test_pick_image_type() -> None:
    assert pick_image_type(["text/plain", "image/webp", "image/jpeg"]) == "image/jpeg"
    assert pick_image_type(["image/x-portable-anymap"]) == "image/x-portable-anymap"
    assert pick_image_type(["text/plain"]) is None


@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX sh")
def test_real_runner_caps_output_time_and_missing_programs() -> None:
    ok = asyncio.run(run_command(["sh", "-c", "printf abc"], timeout_s=5, max_output=3))
    assert (ok.returncode, ok.stdout) == (0, b"abc")
    with pytest.raises(CommandFailed, match="more than 3 bytes"):
        asyncio.run(run_command(["sh", "-c", "printf abcd"], timeout_s=5, max_output=3))
    with pytest.raises(CommandFailed, match=r"did not finish within 0\.2 s"):
        asyncio.run(run_command(["sleep", "5"], timeout_s=0.2, max_output=10))
    with pytest.raises(CommandFailed, match="could not be started"):
        asyncio.run(run_command(["/nonexistent/wl-paste"], timeout_s=1, max_output=10))


def test_clipboard_image_goes_to_the_model_inline(llm_stub: LLMStub, tmp_path: Path) -> None:
    settings = settings_for(llm_stub, tmp_path)
    table = {
        "wl-paste --list-types": CommandResult(0, b"image/png\n"),
        "wl-paste --no-newline --type image/png": CommandResult(0, PNG),
    }
    clip = reader("linux", table, tools={"wl-paste"}, env={"WAYLAND_DISPLAY": "w"})
    loader = ImageLoader(allowed_paths=settings.allowed_paths, clipboard=clip)

    async def scenario(service):
        return await service.analyze("clipboard", "what is this?")

    outcome = with_service(settings, scenario, loader=loader)
    assert not outcome.is_error, outcome.text
    sent = llm_stub.requests_for("openai")[0].json()["messages"][0]["content"]
    assert sent[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert outcome.details["images"][0]["origin"] == "clipboard"
