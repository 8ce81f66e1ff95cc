"""What the server may touch and how much: allowed paths and hosts, and every limit.

The defaults below are the documented defaults; each has a command-line flag (see
``md-vision --help``, built from :data:`LIMIT_FLAGS`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from docab_mcpguard import HostPolicy, PathPolicy, normalise_host
from md_vision.paging import DEFAULT_RESULT_TOKENS, MIN_RESULT_TOKENS


@dataclass(frozen=True)
class Limits:
    fetch_timeout_s: float = 20.0  # whole fetch of one URL: every redirect, headers and body
    max_redirects: int = 5
    max_markdown_bytes: int = 10_000_000  # a markdown file, local or remote
    max_image_bytes: int = 20_000_000  # an image file or download, before decoding
    max_image_pixels: int = 50_000_000  # width x height, checked before decoding (bombs)
    max_image_side: int = 1568  # output images fit in this square; SVGs are rendered into it
    max_response_bytes: int = 5_000_000  # text plus base64 images in one read result
    max_result_tokens: int = DEFAULT_RESULT_TOKENS  # text of one result, for a model (md_vision.paging)
    # Markdown files in one folder index. A large folder's index comes in pages, each parsing only
    # the files it shows, so the cap only bounds the walk and the listing.
    max_folder_files: int = 20_000
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
    LimitFlag(
        "--max-result-tokens",
        "max_result_tokens",
        int,
        "text of one index_md or read_md_with_images result, in tokens (characters / 4); more comes in pages",
        MIN_RESULT_TOKENS,
    ),
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
    raw_data_uris: bool = False  # keep data: URIs in read text instead of placeholders (--raw-data-uris)

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
    ) -> Settings:
        """Validate allowed paths and hosts; raises ``ValueError`` with a start-up message.

        ``local_names``: the entries of the working folder, to recognise a ``*`` the shell expanded.
        """
        return cls(
            paths=PathPolicy.from_dirs(allow_paths, what="--allow-path"),
            hosts=host_policy(allow_domains, local_names),
            limits=limits or Limits(),
            relative_paths=relative_paths,
            raw_data_uris=raw_data_uris,
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


# File extensions that no host name ends with (none is a top-level domain): a value ending in one
# is a file name. ``md`` is Moldova's domain, so it counts only among several values (below).
FILE_EXTENSIONS = frozenset(
    {
        "json", "lock", "lockb", "yaml", "yml", "toml", "txt", "ts", "tsx", "js", "jsx", "mjs", "cjs",
        "cfg", "ini", "markdown", "html", "htm", "log", "csv", "xml", "pdf", "png", "jpg", "jpeg", "gif",
        "svg", "npmrc", "env", "sh", "bat", "rst",
    }
)  # fmt: skip
# Entries that a project folder has and that are no public host: with several values, one of
# these means the shell expanded a `*`.
PROJECT_ENTRIES = frozenset({"node_modules", "dist", "src", "test", "tests", "build", "lib", "bin", "out"})


def normalise_domain_value(value: str) -> str:
    """One ``--allow-domain`` value as the reference read it: quotes around it dropped (a config
    that passed ``"*"`` through no shell), ``*`` is ``all``, ``*.example.com`` is ``example.com``
    (a host already allows its subdomains)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1].strip()
    lowered = value.lower()
    if lowered in ("*", "all"):
        return "all"
    if lowered == "none":
        return "none"
    if lowered.startswith("*."):
        return value[2:]
    return value


def _file_like(value: str, *, among_several: bool, local_names: frozenset[str]) -> bool:
    name = value.strip()
    extension = name.rsplit(".", 1)[1].lower() if "." in name else ""
    if extension in FILE_EXTENSIONS:
        return True
    if not among_several:
        return False
    return (
        "/" in name
        or "\\" in name
        or extension in ("md", "py", "rs", "go")
        or name.lower() in PROJECT_ENTRIES
        or name in local_names
    )


def shell_expansion_error(values: Iterable[str], local_names: frozenset[str] = frozenset()) -> str | None:
    """The start-up message when ``--allow-domain`` values are the names of local files, as when an
    unquoted ``*`` is expanded by the shell (``--allow-domain package.json --allow-domain README.md``).

    A value is a file name when it ends in an extension that no host name has (``.json``,
    ``.lock``, ``.yaml`` ...); among several values also when it names an entry of the working
    folder (``local_names``), has a path separator, ends in ``.md`` (or ``.py``, ``.rs``, ``.go``:
    country domains, but rare beside a file) or is a usual project folder (``src``, ``dist`` ...).
    A single value that merely names a local entry is taken as a host (a folder may be named
    after a site).
    """
    values = [value.strip() for value in values]
    several = len(values) > 1
    suspects = [v for v in values if _file_like(v, among_several=several, local_names=local_names)]
    if not suspects:
        return None
    shown = ", ".join(repr(v) for v in suspects[:3]) + (" ..." if len(suspects) > 3 else "")
    return (
        f"--allow-domain got {shown}, which look like file names: an unquoted * was probably expanded by "
        "the shell into the files of this folder. Write `--allow-domain all` for any public host (or quote "
        "it: --allow-domain '*'), `none` for no URLs, or name hosts such as example.com."
    )


def host_policy(values: Iterable[str], local_names: frozenset[str] = frozenset()) -> HostPolicy:
    """``all``, ``none`` or host names (suffix match). Listed hosts may also be internal.

    Values are read as the reference read them (:func:`normalise_domain_value`); names of local
    files, from a ``*`` the shell expanded, are refused (:func:`shell_expansion_error`).
    """
    raw = [value.strip() for value in values]
    if not raw:
        raise ValueError("at least one --allow-domain is required (all, none, or a host name)")
    expanded = shell_expansion_error(raw, local_names)
    if expanded is not None:
        raise ValueError(expanded)
    values = [normalise_domain_value(value) for value in raw]
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
    if "*" in value:
        raise ValueError(
            f"--allow-domain {value!r}: a wildcard can only be `*` (any host, like `all`) or lead the "
            "name (`*.example.com`, the same as example.com, which also allows its subdomains)"
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
