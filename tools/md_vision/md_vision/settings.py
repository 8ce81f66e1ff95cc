"""What the server may touch and how much: allowed paths and hosts, and every limit.

The defaults below are the documented defaults; each has a command-line flag (see
``md-vision --help``, built from :data:`LIMIT_FLAGS`). Hosts and paths are named as on every
docab server (:data:`ACCESS`: ``--allow-host`` / ``MD_VISION_ALLOW_HOSTS``, ``--allow-path`` /
``MD_VISION_ALLOW_PATHS``; the JavaScript server's ``--allow-domain`` is the same setting).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from docab_mcpguard import HostPolicy, PathPolicy
from docab_mcpguard.access import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Given,
    SettingError,
    host_policy,
    path_policy,
    path_remedy,
    server_settings,
)
from md_vision.paging import DEFAULT_RESULT_TOKENS, MIN_RESULT_TOKENS

ACCESS = server_settings("md-vision", "MD_VISION", host_flags=("--allow-domain",))


@dataclass(frozen=True)
class Limits:
    fetch_timeout_s: float = 20.0  # whole fetch of one URL: every redirect, headers and body
    max_redirects: int = 5
    max_markdown_bytes: int = 10_000_000  # a markdown file, local or remote
    max_image_bytes: int = 20_000_000  # an image file or download, before decoding
    max_image_pixels: int = 50_000_000  # width x height, checked before decoding (bombs)
    max_image_side: int = 1568  # output images fit in this square; SVGs are rendered into it
    svg_render_s: float = 10.0  # one SVG render, wall and CPU time (in a child process: md_vision.sandbox)
    svg_memory_mb: int = 1024  # memory one SVG render may map beyond the child's start
    # A raster image of more than 4 MP is decoded in a child process (md_vision.sandbox) that may
    # map this much beyond its start, within svg_render_s; a 2 KB WebP can decode to 750 MB.
    decode_memory_mb: int = 1024
    max_read_pixels: int = 250_000_000  # pixels one read may decode, all its images together
    max_response_bytes: int = 5_000_000  # text plus base64 images in one read result
    max_result_tokens: int = DEFAULT_RESULT_TOKENS  # text of one result, for a model (md_vision.paging)
    # Markdown files in one folder index. A large folder's index comes in pages, each parsing only
    # the files it shows, so the cap only bounds the walk and the listing.
    max_folder_files: int = 20_000
    parse_timeout_s: float = 30.0  # one document's parse (md_vision.document: checked between blocks)
    index_workers: int = field(default_factory=lambda: max(1, min(4, os.cpu_count() or 1)))  # processes


@dataclass(frozen=True)
class LimitFlag:
    flag: str
    attribute: str
    kind: type
    help: str
    minimum: float


LIMIT_FLAGS: tuple[LimitFlag, ...] = (
    LimitFlag("--fetch-timeout", "fetch_timeout_s", float, "seconds for one URL, redirects included", 0.1),
    LimitFlag("--max-redirects", "max_redirects", int, "redirects followed per URL", 0),
    LimitFlag("--max-markdown-bytes", "max_markdown_bytes", int, "size of one markdown file or download", 1),
    LimitFlag("--max-image-bytes", "max_image_bytes", int, "size of one image file or download", 1),
    LimitFlag("--max-image-pixels", "max_image_pixels", int, "width x height of one image (bomb guard)", 1),
    LimitFlag("--max-image-side", "max_image_side", int, "long side of images sent, SVGs included", 16),
    LimitFlag(
        "--svg-seconds", "svg_render_s", float, "seconds one SVG render may take (then it is killed)", 0.1
    ),
    LimitFlag("--svg-memory-mb", "svg_memory_mb", int, "memory one SVG render may use, in MB", 16),
    LimitFlag(
        "--decode-memory-mb",
        "decode_memory_mb",
        int,
        "memory one image decode (over 4 MP) may use, in MB",
        16,
    ),
    LimitFlag(
        "--max-read-pixels",
        "max_read_pixels",
        int,
        "pixels one read_md_with_images may decode, its images together (then placeholders)",
        1,
    ),
    LimitFlag("--max-response-bytes", "max_response_bytes", int, "text + base64 images in one read", 10_000),
    LimitFlag(
        "--max-result-tokens",
        "max_result_tokens",
        int,
        "text of one index_md or read_md_with_images result, in tokens (characters / 4); more comes in pages",
        MIN_RESULT_TOKENS,
    ),
    LimitFlag("--max-files", "max_folder_files", int, "markdown files in one folder index", 1),
    LimitFlag(
        "--parse-seconds", "parse_timeout_s", float, "seconds one markdown document may take to parse", 0.1
    ),
    LimitFlag(
        "--workers",
        "index_workers",
        int,
        "worker processes that parse a large folder (1 = in the server process)",
        1,
    ),
)


@dataclass(frozen=True)
class Settings:
    """``paths``: the allowed folders; empty (``follow_roots``) when the server was started without
    any and takes them from its client's MCP roots."""

    paths: PathPolicy
    hosts: HostPolicy
    limits: Limits = field(default_factory=Limits)
    # --relative-paths: show local paths relative to the first allowed folder, so a sandboxed agent
    # does not learn where its files live (a harness's workspace path can name the run).
    relative_paths: bool = False
    raw_data_uris: bool = False  # keep data: URIs in read text instead of placeholders (--raw-data-uris)
    follow_roots: bool = False  # no --allow-path: the client's roots are the allowed folders
    structured_output: bool = True  # outputSchema + structuredContent (--no-structured-output)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES  # one JSON-RPC message on stdin (--max-message-mb)

    @classmethod
    def build(
        cls,
        *,
        allow_paths: Iterable[str | os.PathLike[str]],
        allow_domains: Iterable[str] = ("none",),
        limits: Limits | None = None,
        relative_paths: bool = False,
        local_names: frozenset[str] = frozenset(),
        raw_data_uris: bool = False,
        structured_output: bool = True,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        paths_given: Given | None = None,
        hosts_given: Given | None = None,
    ) -> Settings:
        """Validate allowed paths and hosts; raises ``ValueError`` with a start-up message.

        ``allow_paths`` and ``allow_domains`` are the flags' values; ``paths_given`` and
        ``hosts_given``, when set, say where they came from (a variable, say) and win. No
        allowed path at all: the server follows its client's MCP roots. ``local_names``: the
        entries of the working folder, to recognise a ``*`` the shell expanded.
        """
        paths = paths_given or _flag_values(list(allow_paths), ACCESS.paths.flag)
        hosts = hosts_given or _flag_values(list(allow_domains), ACCESS.hosts.flag)
        if paths is None:
            policy = PathPolicy((), remedy=path_remedy(ACCESS, client_roots=True))
        else:
            policy = path_policy(paths, ACCESS)
        if hosts is None:
            raise SettingError(f"at least one {ACCESS.hosts.flag} is required (all, none, or a host name)")
        return cls(
            paths=policy,
            hosts=host_policy(hosts, ACCESS, open_by_default=False, local_names=local_names),
            limits=limits or Limits(),
            relative_paths=relative_paths,
            raw_data_uris=raw_data_uris,
            follow_roots=paths is None,
            structured_output=structured_output,
            max_message_bytes=max_message_bytes,
        )

    def with_paths(self, paths: PathPolicy) -> Settings:
        """These settings with other allowed folders (the client's roots)."""
        return replace(self, paths=paths)

    def show(self, path: str | os.PathLike[str]) -> str:
        """A local (real) path as results show it: as is, or relative to the first allowed folder
        with ``relative_paths`` (forward slashes; ``.`` for the folder itself)."""
        text = os.fspath(path)
        if not self.relative_paths or not self.paths.roots:
            return text
        root = self.paths.roots[0]
        if text == root:
            return "."
        if text.startswith(root.rstrip(os.sep) + os.sep):
            return text[len(root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
        return text

    def hide_roots(self, message: str) -> str:
        """``message`` with the first allowed folder's path shown as ``.`` under ``relative_paths``."""
        if not self.relative_paths or not self.paths.roots:
            return message
        root = self.paths.roots[0].rstrip(os.sep)
        return message.replace(root + os.sep, "").replace(root, ".")


def _flag_values(values: list[str | os.PathLike[str]], flag: str) -> Given | None:
    return Given(tuple(os.fspath(value) for value in values), flag, True) if values else None
