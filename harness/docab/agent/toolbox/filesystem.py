"""Built-in read-only filesystem tools over one sample's workspace: ``list_files``, ``read_file``, ``grep``.

These are the baseline arm's whole tool set and part of every treatment arm. Every path is
resolved with :class:`docab_mcpguard.PathPolicy` on its real path, so neither ``..`` nor a symlink
leads outside the workspace; listings and searches skip anything whose real path is outside.
Paths shown to the model are relative to the workspace root, with forward slashes.

A failure (missing file, bad regex, a path outside the workspace) comes back as an ``is_error``
result whose text tells the model what to do instead; no exception leaves ``call``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docab.agent.toolbox.base import Tool
from docab.messages import Image, Text, ToolResult, ToolSpec
from docab_mcpguard import PathDenied, PathPolicy

READ_DEFAULT_LIMIT = 2000
READ_MAX_LIMIT = 5000
MAX_LINE_CHARS = 2000  # longer lines are cut in read_file output
GREP_LINE_CHARS = 500  # longer lines are cut in grep output
GREP_DEFAULT_MATCHES = 50
GREP_MAX_MATCHES = 500
GREP_MAX_CONTEXT = 20
LIST_MAX_ENTRIES = 1000
MAX_TEXT_BYTES = 64 * 1024 * 1024
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


def sniff_image_type(head: bytes) -> str | None:
    """The media type of an image from its first bytes (PNG, JPEG, GIF, WebP), else None."""
    for signature, media_type in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class ToolInputError(Exception):
    """Bad arguments; the message is shown to the model as an error result."""


@dataclass(frozen=True)
class Workspace:
    """The sample's workspace root and the policy that confines every path to it."""

    root: Path
    policy: PathPolicy

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> Workspace:
        policy = PathPolicy.from_dirs([root], what="workspace")
        return cls(Path(policy.roots[0]), policy)

    def resolve(self, raw: Any, *, what: str = "path") -> Path:
        if raw is None or raw == "":
            raw = "."
        if not isinstance(raw, str):
            raise ToolInputError(f"{what} must be a string, got {type(raw).__name__}")
        try:
            return self.policy.resolve(raw)
        except PathDenied:
            raise ToolInputError(
                f"{raw!r} is outside the workspace; use a path relative to the workspace, "
                "e.g. 'document/document.md'"
            ) from None

    def show(self, path: Path) -> str:
        """A real path inside the workspace as the model sees it."""
        text, root = str(path), str(self.root)
        if text == root:
            return "."
        if text.startswith(root + os.sep):  # always so for resolved paths; a cheap relpath
            return text[len(root) + 1 :].replace(os.sep, "/")
        return os.path.relpath(text, root).replace(os.sep, "/")

    def walk_files(self, base: Path) -> Iterator[Path]:
        """Regular files under ``base`` in sorted order, skipping anything that resolves outside."""
        if base.is_file():
            yield base
            return
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            kept = []
            for name in dirnames:
                real = os.path.realpath(os.path.join(dirpath, name))
                if self.policy.contains(real):
                    kept.append(name)
            dirnames[:] = kept
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                real = os.path.realpath(full)
                if self.policy.contains(real) and os.path.isfile(real):
                    yield Path(full)


def _int_arg(arguments: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = arguments.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ToolInputError(f"{name} must be an integer between {low} and {high}, got {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ToolInputError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _bool_arg(arguments: dict[str, Any], name: str, default: bool) -> bool:
    value = arguments.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolInputError(f"{name} must be true or false, got {value!r}")
    return value


def _reject_unknown(arguments: dict[str, Any], spec: ToolSpec) -> None:
    unknown = sorted(set(arguments) - set(spec.input_schema.get("properties", {})))
    if unknown:
        allowed = ", ".join(spec.input_schema["properties"])
        raise ToolInputError(f"unknown argument(s) {', '.join(unknown)} for {spec.name}; it takes: {allowed}")
    missing = [name for name in spec.input_schema.get("required", ()) if name not in arguments]
    if missing:
        raise ToolInputError(f"{spec.name} needs the argument(s): {', '.join(missing)}")


class _FsTool:
    spec: ToolSpec

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            if not isinstance(arguments, dict):
                raise ToolInputError(f"{self.spec.name} takes a JSON object of arguments")
            _reject_unknown(arguments, self.spec)
            return self.run(arguments)
        except ToolInputError as exc:
            return ToolResult.error(f"{self.spec.name}: {exc}")
        except OSError as exc:
            # The OS message names a real path; show the model only what it can act on.
            return ToolResult.error(
                f"{self.spec.name}: the file could not be read ({exc.strerror or 'I/O error'})"
            )

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        raise NotImplementedError


class ListFiles(_FsTool):
    spec = ToolSpec(
        name="list_files",
        description=(
            "List the files in the workspace (recursively), with their sizes. "
            "Optionally filter with a glob pattern such as '*.md' or 'document/pages/*.png'."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Folder to list, relative to the workspace. Default: '.'",
                },
                "pattern": {
                    "type": "string",
                    "description": "Glob on the path relative to the workspace ('*' matches across folders).",
                },
            },
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        base = self.workspace.resolve(arguments.get("path"))
        pattern = arguments.get("pattern") or "*"
        if not isinstance(pattern, str):
            raise ToolInputError("pattern must be a string")
        if not base.exists():
            raise ToolInputError(
                f"no such folder: {self.workspace.show(base)}; list '.' to see the workspace"
            )
        lines: list[str] = []
        count = 0
        for path in self.workspace.walk_files(base):
            shown = self.workspace.show(path)
            if not (fnmatch.fnmatch(shown, pattern) or fnmatch.fnmatch(path.name, pattern)):
                continue
            count += 1
            if count <= LIST_MAX_ENTRIES:
                lines.append(f"{shown}\t{path.stat().st_size:,} bytes")
        if not lines:
            return ToolResult(blocks=(Text(f"no files match {pattern!r} under {self.workspace.show(base)}"),))
        if count > LIST_MAX_ENTRIES:
            lines.append(f"[{count - LIST_MAX_ENTRIES:,} more files not shown: narrow the path or pattern]")
        return ToolResult(blocks=(Text("\n".join(lines)),))


class ReadFile(_FsTool):
    spec = ToolSpec(
        name="read_file",
        description=(
            "Read a text file with line numbers (use offset and limit for long files), "
            "or an image file (PNG, JPEG, GIF, WebP), which is returned as an image: one image per call."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to read (1-based). Default: 1.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": READ_MAX_LIMIT,
                    "description": f"Number of lines to read. Default: {READ_DEFAULT_LIMIT}.",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        path = self.workspace.resolve(arguments.get("path"))
        shown = self.workspace.show(path)
        offset = _int_arg(arguments, "offset", 1, 1, 10**9)
        limit = _int_arg(arguments, "limit", READ_DEFAULT_LIMIT, 1, READ_MAX_LIMIT)
        if path.is_dir():
            raise ToolInputError(f"{shown} is a folder; use list_files to see its files")
        if not path.exists():
            raise ToolInputError(f"no such file: {shown}; use list_files to see the workspace")
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES and path.suffix.lower() not in IMAGE_SUFFIXES:
            raise ToolInputError(
                f"{shown} is {size:,} bytes, over the {MAX_TEXT_BYTES:,}-byte limit for text files"
            )
        if size > MAX_IMAGE_BYTES and path.suffix.lower() in IMAGE_SUFFIXES:
            raise ToolInputError(
                f"{shown} is an image of {size:,} bytes, over the {MAX_IMAGE_BYTES:,}-byte limit"
            )
        raw = path.read_bytes()  # one open: reads are the hot path of every sample
        media_type = sniff_image_type(raw[:16])
        if media_type is not None:
            if size > MAX_IMAGE_BYTES:
                raise ToolInputError(
                    f"{shown} is an image of {size:,} bytes, over the {MAX_IMAGE_BYTES:,}-byte limit"
                )
            image = Image(raw, media_type, name=shown)  # named for text-only notes
            return ToolResult(blocks=(Text(f"{shown} ({media_type}, {size:,} bytes)"), image))
        if path.suffix.lower() in IMAGE_SUFFIXES:
            raise ToolInputError(f"{shown} has an image name but is not a PNG, JPEG, GIF or WebP image")
        if b"\x00" in raw[:8192]:
            raise ToolInputError(f"{shown} is a binary file, not text or a supported image")
        lines = raw.decode("utf-8", errors="replace").splitlines()
        if not lines:
            return ToolResult(blocks=(Text(f"{shown} is empty"),))
        if offset > len(lines):
            raise ToolInputError(f"offset {offset} is past the end of {shown} ({len(lines):,} lines)")
        window = lines[offset - 1 : offset - 1 + limit]
        last = offset + len(window) - 1
        body = "\n".join(
            f"{number:>6}\t{_clip(line, MAX_LINE_CHARS)}" for number, line in enumerate(window, offset)
        )
        if last < len(lines):
            body += f"\n[lines {offset}-{last} of {len(lines):,}; read on with offset={last + 1}]"
        return ToolResult(blocks=(Text(body),))


class Grep(_FsTool):
    spec = ToolSpec(
        name="grep",
        description=(
            "Search text files in the workspace for a regular expression (Python syntax). "
            "Prints path:line:text for each matching line, with optional context lines."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {
                    "type": "string",
                    "description": "File or folder to search, relative to the workspace. Default: '.'",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose name matches, e.g. '*.md'.",
                },
                "ignore_case": {"type": "boolean", "description": "Case-insensitive search. Default: false."},
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": GREP_MAX_CONTEXT,
                    "description": "Lines of context before and after each match. Default: 0.",
                },
                "max_matches": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": GREP_MAX_MATCHES,
                    "description": f"Stop after this many matching lines. Default: {GREP_DEFAULT_MATCHES}.",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        pattern = arguments.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolInputError("pattern must be a non-empty string")
        flags = re.IGNORECASE if _bool_arg(arguments, "ignore_case", False) else 0
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            raise ToolInputError(
                f"invalid regular expression {pattern!r}: {exc.msg}"
                + (f" at position {exc.pos}" if exc.pos is not None else "")
                + " (Python regex syntax; escape literal characters such as ( [ . with a backslash)"
            ) from None
        context = _int_arg(arguments, "context", 0, 0, GREP_MAX_CONTEXT)
        cap = _int_arg(arguments, "max_matches", GREP_DEFAULT_MATCHES, 1, GREP_MAX_MATCHES)
        name_glob = arguments.get("glob")
        if name_glob is not None and not isinstance(name_glob, str):
            raise ToolInputError("glob must be a string")
        base = self.workspace.resolve(arguments.get("path"))
        if not base.exists():
            raise ToolInputError(f"no such file or folder: {self.workspace.show(base)}")

        out: list[str] = []
        matches = files_matched = 0
        capped = False
        for path in self.workspace.walk_files(base):
            if name_glob and not fnmatch.fnmatch(path.name, name_glob):
                continue
            lines = _text_lines(path)
            if lines is None:
                continue
            shown = self.workspace.show(path)
            hits = [i for i, line in enumerate(lines) if regex.search(line)]
            if not hits:
                continue
            files_matched += 1
            if matches + len(hits) > cap:
                hits, capped = hits[: cap - matches], True
            matches += len(hits)
            out.extend(_grep_blocks(shown, lines, hits, context, separate=bool(out)))
            if capped:
                break
        if not matches:
            where = self.workspace.show(base)
            return ToolResult(blocks=(Text(f"no matches for {pattern!r} in {where}"),))
        if capped:
            out.append(f"[stopped at max_matches={cap}: more matches exist; narrow the pattern or the path]")
        else:
            out.append(f"[{matches} matching line{'s' if matches != 1 else ''} in {files_matched} file(s)]")
        return ToolResult(blocks=(Text("\n".join(out)),))


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + " …[line cut]"


def _text_lines(path: Path) -> list[str] | None:
    """The lines of a text file, or None for binary, oversized or unreadable files."""
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            return None
        with path.open("rb") as handle:
            head = handle.read(8192)
            # Page images sit beside the text: judge by the first bytes before reading the rest.
            if b"\x00" in head or sniff_image_type(head[:16]):
                return None
            raw = head + handle.read()
    except OSError:
        return None
    return raw.decode("utf-8", errors="replace").splitlines()


def _grep_blocks(shown: str, lines: list[str], hits: list[int], context: int, *, separate: bool) -> list[str]:
    """grep -n style: ``path:N:text`` for matches, ``path-N-text`` for context lines and, when
    context is shown, ``--`` between groups that are not contiguous (``separate``: output before)."""
    out: list[str] = []
    hit_set = set(hits)
    last = -2
    for hit in hits:
        start, end = max(0, hit - context, last + 1), min(len(lines) - 1, hit + context)
        if start > end:
            continue  # already printed as part of the previous group
        if context and (out or separate) and start > last + 1:
            out.append("--")
        for index in range(start, end + 1):
            mark = ":" if index in hit_set else "-"
            out.append(f"{shown}{mark}{index + 1}{mark}{_clip(lines[index], GREP_LINE_CHARS)}")
        last = end
    return out


FILESYSTEM_TOOLS: tuple[type[_FsTool], ...] = (ListFiles, ReadFile, Grep)


def filesystem_tools(workspace: Workspace | str | os.PathLike[str]) -> list[Tool]:
    """The three read-only tools over ``workspace``."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace.at(workspace)
    return [tool(ws) for tool in FILESYSTEM_TOOLS]
