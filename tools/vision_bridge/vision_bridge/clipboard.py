"""Read an image from the system clipboard through the platform's own tools.

- Windows: PowerShell (``System.Windows.Forms.Clipboard``), the PNG sent back as base64 text.
- macOS: ``osascript`` asking for the clipboard as PNG (then TIFF), returned as a hex literal.
  The reference compiled a Swift script; AppleScript ships with every macOS and needs no Xcode.
- Linux and other Unix: ``wl-paste`` under Wayland or ``xclip`` under X11, when installed; the
  best image type the clipboard offers is chosen from its list of types.

Commands run through an injectable :class:`CommandRunner`, so tests need no real clipboard.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vision_bridge.errors import input_error


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: bytes
    stderr: bytes = b""


class CommandFailed(Exception):
    """The program is missing, ran too long, or printed more than allowed."""


class CommandRunner(Protocol):
    async def __call__(self, argv: Sequence[str], *, timeout_s: float, max_output: int) -> CommandResult: ...


async def run_command(argv: Sequence[str], *, timeout_s: float, max_output: int) -> CommandResult:
    """Run ``argv`` without a shell; stdout is capped at ``max_output`` bytes, the run at ``timeout_s``."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise CommandFailed(f"{argv[0]} could not be started") from exc
    assert process.stdout is not None and process.stderr is not None

    async def read_capped() -> bytes:
        chunks: list[bytes] = []
        total = 0
        while chunk := await process.stdout.read(65536):  # type: ignore[union-attr]
            total += len(chunk)
            if total > max_output:
                raise CommandFailed(f"{argv[0]} printed more than {max_output:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    try:
        async with asyncio.timeout(timeout_s):
            stdout, stderr = await asyncio.gather(read_capped(), process.stderr.read(65536))
            returncode = await process.wait()
    except TimeoutError:
        raise CommandFailed(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    return CommandResult(returncode, stdout, stderr)


IMAGE_TYPE_PREFERENCE = ("image/png", "image/jpeg", "image/webp", "image/gif", "image/bmp")

_WINDOWS_SCRIPT = (
    "Add-Type -AssemblyName System.Windows.Forms, System.Drawing; "
    "$img = [System.Windows.Forms.Clipboard]::GetImage(); "
    "if ($img -eq $null) { exit 3 }; "
    "$ms = New-Object System.IO.MemoryStream; "
    "$img.Save($ms, [System.Drawing.Imaging.ImageFormat]::Png); "
    "[Console]::Out.Write([Convert]::ToBase64String($ms.ToArray()))"
)
_NO_IMAGE = "the clipboard holds no image; copy an image first, or pass a file path or URL instead"
# AppleScript prints «data PNGf89504E47…»; the guillemets' encoding varies, the rest does not.
_MAC_DATA = re.compile(rb"data (?:PNGf|TIFF)([0-9A-Fa-f]+)")


def pick_image_type(types: Sequence[str]) -> str | None:
    """The clipboard type to ask for: a known image type first, then any other ``image/*``."""
    offered = [t.strip() for t in types if t.strip()]
    lowered = {t.lower(): t for t in offered}
    for preferred in IMAGE_TYPE_PREFERENCE:
        if preferred in lowered:
            return lowered[preferred]
    return next((t for t in offered if t.lower().startswith("image/")), None)


def parse_osascript_data(stdout: bytes) -> bytes | None:
    """Decode AppleScript's ``«data PNGf89504E47…»`` literal; None when there is none."""
    match = _MAC_DATA.search(stdout)
    if match is None:
        return None
    try:
        return binascii.unhexlify(match.group(1))
    except binascii.Error:
        return None


@dataclass
class ClipboardReader:
    platform: str = sys.platform
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    which: Callable[[str], str | None] = shutil.which
    run: CommandRunner = run_command
    timeout_s: float = 10.0

    async def read_image(self, *, max_bytes: int) -> bytes:
        """The clipboard's image bytes, or an input error that says what to do."""
        if self.platform == "win32":
            data = await self._windows(max_bytes)
        elif self.platform == "darwin":
            data = await self._macos(max_bytes)
        else:
            data = await self._unix(max_bytes)
        if not data:
            raise input_error(_NO_IMAGE)
        if len(data) > max_bytes:
            raise input_error(f"the clipboard image is {len(data):,} bytes, over the limit of {max_bytes:,}")
        return data

    async def _call(self, argv: Sequence[str], max_output: int) -> CommandResult:
        try:
            return await self.run(argv, timeout_s=self.timeout_s, max_output=max_output)
        except CommandFailed as exc:
            raise input_error(f"could not read the clipboard: {exc}") from None

    async def _windows(self, max_bytes: int) -> bytes:
        shell = next((p for p in ("powershell", "pwsh") if self.which(p)), None)
        if shell is None:
            raise input_error(
                "reading the clipboard on Windows needs PowerShell, which was not found on PATH"
            )
        argv = [shell, "-NoProfile", "-NonInteractive", "-STA", "-Command", _WINDOWS_SCRIPT]
        result = await self._call(argv, max_output=max_bytes * 4 // 3 + 16)
        if result.returncode == 3:
            raise input_error(_NO_IMAGE)
        if result.returncode != 0:
            raise input_error("could not read the clipboard: PowerShell failed to read an image from it")
        try:
            return base64.b64decode(result.stdout.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise input_error("could not read the clipboard: PowerShell returned unreadable data") from None

    async def _macos(self, max_bytes: int) -> bytes:
        if not self.which("osascript"):
            raise input_error("reading the clipboard on macOS needs osascript, which was not found on PATH")
        # Screenshots are PNG on the pasteboard; images copied from some apps are only TIFF.
        for kind in ("PNGf", "TIFF"):
            argv = ["osascript", "-e", f"the clipboard as «class {kind}»"]
            result = await self._call(argv, max_output=max_bytes * 2 + 64)
            if result.returncode == 0:
                data = parse_osascript_data(result.stdout)
                if data:
                    return data
        raise input_error(_NO_IMAGE)

    async def _unix(self, max_bytes: int) -> bytes:
        wayland = bool(self.env.get("WAYLAND_DISPLAY")) and self.which("wl-paste")
        x11 = bool(self.env.get("DISPLAY")) and self.which("xclip")
        if wayland:
            list_argv, get_argv = ["wl-paste", "--list-types"], ["wl-paste", "--no-newline", "--type"]
        elif x11:
            list_argv = ["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"]
            get_argv = ["xclip", "-selection", "clipboard", "-o", "-t"]
        elif self.which("wl-paste") or self.which("xclip"):
            raise input_error(
                "cannot read the clipboard: no graphical session (neither WAYLAND_DISPLAY nor DISPLAY is set "
                "for the server)"
            )
        else:
            raise input_error(
                "reading the clipboard on Linux needs wl-paste (package wl-clipboard, Wayland) or xclip (X11); "
                "neither is installed. Save the image to a file and pass its path instead"
            )
        listed = await self._call(list_argv, max_output=65536)
        if listed.returncode != 0:
            raise input_error(_NO_IMAGE)
        types = listed.stdout.decode("utf-8", "replace").splitlines()
        chosen = pick_image_type(types)
        if chosen is None:
            offered = ", ".join(t for t in types[:5] if t.strip()) or "nothing"
            raise input_error(f"the clipboard holds no image (it offers: {offered})")
        result = await self._call([*get_argv, chosen], max_output=max_bytes)
        if result.returncode != 0:
            raise input_error(f"could not read the clipboard's {chosen} data")
        return result.stdout
