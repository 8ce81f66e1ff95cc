"""What the server may touch and how much: allowed paths and hosts, and every limit.

The defaults below are the documented defaults; each has a command-line flag (see
``md-vision --help``, built from :data:`LIMIT_FLAGS`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from docab_mcpguard import HostPolicy, PathPolicy, normalise_host


@dataclass(frozen=True)
class Limits:
    fetch_timeout_s: float = 20.0  # whole fetch of one URL: every redirect, headers and body
    max_redirects: int = 5
    max_markdown_bytes: int = 10_000_000  # a markdown file, local or remote
    max_image_bytes: int = 20_000_000  # an image file or download, before decoding
    max_image_pixels: int = 50_000_000  # width x height, checked before decoding (bombs)
    max_image_side: int = 1568  # output images fit in this square; SVGs are rendered into it
    max_response_bytes: int = 5_000_000  # text plus base64 images in one read result
    max_folder_files: int = 2000  # markdown files in one folder index
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
    LimitFlag("--max-response-bytes", "max_response_bytes", int, "text + base64 images in one read", 10_000),
    LimitFlag("--max-files", "max_folder_files", int, "markdown files in one folder index", 1),
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
    paths: PathPolicy
    hosts: HostPolicy
    limits: Limits = field(default_factory=Limits)
    # --relative-paths: show local paths relative to the first allowed folder, so a sandboxed agent
    # does not learn where its files live (a harness's workspace path can name the run).
    relative_paths: bool = False

    @classmethod
    def build(
        cls,
        *,
        allow_paths: Iterable[str | os.PathLike[str]],
        allow_domains: Iterable[str] = ("none",),
        limits: Limits | None = None,
        relative_paths: bool = False,
    ) -> Settings:
        """Validate allowed paths and hosts; raises ``ValueError`` with a start-up message."""
        return cls(
            paths=PathPolicy.from_dirs(allow_paths, what="--allow-path"),
            hosts=host_policy(allow_domains),
            limits=limits or Limits(),
            relative_paths=relative_paths,
        )

    def show(self, path: str | os.PathLike[str]) -> str:
        """A local (real) path as results show it: as is, or relative to the first allowed folder
        with ``relative_paths`` (forward slashes; ``.`` for the folder itself)."""
        text = os.fspath(path)
        if not self.relative_paths:
            return text
        root = self.paths.roots[0]
        if text == root:
            return "."
        if text.startswith(root.rstrip(os.sep) + os.sep):
            return text[len(root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
        return text

    def hide_roots(self, message: str) -> str:
        """``message`` with the first allowed folder's path shown as ``.`` under ``relative_paths``."""
        if not self.relative_paths:
            return message
        root = self.paths.roots[0].rstrip(os.sep)
        return message.replace(root + os.sep, "").replace(root, ".")


def host_policy(values: Iterable[str]) -> HostPolicy:
    """``all``, ``none`` or host names (suffix match). Listed hosts may also be internal."""
    values = [value.strip() for value in values]
    if not values:
        raise ValueError("at least one --allow-domain is required (all, none, or a host name)")
    lowered = [value.lower() for value in values]
    for special in ("all", "none"):
        if special in lowered and len(values) > 1:
            raise ValueError(
                f"--allow-domain {special} must stand alone; it cannot be combined with other values"
            )
    if lowered == ["all"]:
        return HostPolicy.build(allow_any=True)
    if lowered == ["none"]:
        return HostPolicy.build()
    hosts = [_check_host(value) for value in values]
    # A host named explicitly may reach internal addresses (e.g. 127.0.0.1 for a local docs
    # server); `all` and suffix matches never do.
    return HostPolicy.build(domains=hosts, internal_hosts=hosts)


def _check_host(value: str) -> str:
    if not value:
        raise ValueError("an empty --allow-domain was given")
    if value == "*" or "*" in value:
        raise ValueError(
            f"--allow-domain {value!r}: wildcards are not supported; use 'all' for any host, or a domain "
            "such as example.com (it also allows its subdomains)"
        )
    if "://" in value or "/" in value:
        raise ValueError(f"--allow-domain {value!r}: give a host name such as example.com, not a URL or path")
    host = value
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    elif host.count(":") == 1:
        raise ValueError(f"--allow-domain {value!r}: give the host without a port")
    normalised = normalise_host(host)
    if not normalised or any(char.isspace() for char in normalised):
        raise ValueError(f"--allow-domain {value!r} is not a valid host name")
    return normalised
