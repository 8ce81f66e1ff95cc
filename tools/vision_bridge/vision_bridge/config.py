"""Settings of the server, read once from the environment at start.

:func:`load_settings` collects every problem before failing, so a user fixes a broken MCP client
config in one go; :data:`ENV_HELP` is the table ``vision-bridge --help`` prints. This module
imports only the standard library (and mcpguard's path policy), so ``--help`` stays instant.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from docab_mcpguard import PathPolicy
from docab_mcpguard.access import (
    DEFAULT_MAX_MESSAGE_BYTES,
    SettingError,
    check_host,
    given,
    host_policy,
    message_cap,
    path_policy,
    server_settings,
    switch,
)
from vision_bridge.errors import ConfigError

ACCESS = server_settings("vision-bridge", "VISION", path_variables=("VISION_ALLOWED_PATHS",))

Backend = Literal["openai", "anthropic", "tesseract"]

DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CACHE_TTL_S = 3600
DEFAULT_CACHE_MAX_MB = 64
DEFAULT_MAX_RETRIES = 2
DEFAULT_DECODE_MEMORY_MB = 2048
"""Memory one image's decode may take (vision_bridge.isolation): room for the largest image the
pixel cap lets through (100 MP as RGBA is 400 MB) with a resize and an encoding beside it."""

ENV_HELP = f"""\
Environment (API backends need the first three):
  VISION_API_BASE_URL    provider base URL. OpenAI format: ends with /v1 (https://api.openai.com/v1);
                         Anthropic format: without /v1 (https://api.anthropic.com)
  VISION_API_KEY         API key (any placeholder for local servers that need none)
  VISION_MODEL           vision model name, e.g. gpt-4o, claude-sonnet-4-5, qwen2.5-vl
  VISION_API_FORMAT      openai (default: Chat Completions, any OpenAI-compatible server) | anthropic
  VISION_BACKEND         api (default) | tesseract: offline OCR with the system's Tesseract, no API,
                         serves ocr_image only
  VISION_MAX_TOKENS      answer token limit (default 4096)
  VISION_TIMEOUT         seconds one tool call may take in all: inputs, downloads, provider
                         connect, headers and body, retries (default 60)
  VISION_MAX_RETRIES     provider retries on 429/5xx/connection errors, within VISION_TIMEOUT (default 2)
  VISION_CACHE_TTL       seconds a result stays cached (default 3600; 0 disables the cache)
  VISION_CACHE_DIR       cache folder (default: the user cache dir + /vision-bridge), created private
  VISION_CACHE_MAX_MB    cap on the cache folder in MB (default 64): expired entries are pruned, then
                         the oldest answers until it fits
  VISION_ALLOW_PATHS     (flag --allow-path DIR, repeatable; older name VISION_ALLOWED_PATHS)
                         absolute folders local images may be read from, separated by '{os.pathsep}'.
                         Default: the client's MCP roots when it declares some, else the working
                         directory (the home directory when the server starts in the filesystem
                         root) and the temp directory
  VISION_ALLOW_HOSTS     (flag --allow-host HOST, repeatable) comma-separated hosts that image URLs
                         may reach on loopback or private addresses (any public host is allowed);
                         none: no image URLs at all
  VISION_STRUCTURED_OUTPUT  0 (flag --no-structured-output): results without structuredContent
  VISION_MAX_IMAGE_SIDE  optional cap in pixels on an image's long side before it is sent
  VISION_DECODE_MEMORY_MB  memory one image may take to decode, in MB (default 2048): an image
                         that must be converted or downscaled is decoded in a child process under
                         this cap and the call's time, two at a time
  VISION_TESSERACT_CMD   the tesseract program (default: tesseract on PATH)
"""


@dataclass(frozen=True)
class Settings:
    """Everything the server needs, validated. API fields are empty for the tesseract backend."""

    backend: Backend
    base_url: str = ""
    api_key: str = ""
    model: str = ""
    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    cache_ttl_s: int = DEFAULT_CACHE_TTL_S
    cache_dir: Path = Path(".")
    cache_max_bytes: int = DEFAULT_CACHE_MAX_MB * 1024 * 1024
    allowed_paths: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    max_image_side: int | None = None
    tesseract_cmd: str = "tesseract"
    # No --allow-path / VISION_ALLOW_PATHS: the client's MCP roots replace the default folders.
    follow_roots: bool = False
    url_images: bool = True  # false under --allow-host none: image URLs are refused
    structured_output: bool = True  # outputSchema + structuredContent (--no-structured-output)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES  # one JSON-RPC message on stdin (--max-message-mb)
    decode_memory_bytes: int = DEFAULT_DECODE_MEMORY_MB << 20  # one image's decode (VISION_DECODE_MEMORY_MB)

    @property
    def cache_enabled(self) -> bool:
        return self.cache_ttl_s > 0

    @property
    def uses_api(self) -> bool:
        return self.backend != "tesseract"

    def describe(self) -> str:
        """One line for the start-up log (never the key)."""
        if self.uses_api:
            what = f"{self.backend} format, model {self.model} at {self.base_url}"
        else:
            what = f"offline Tesseract OCR ({self.tesseract_cmd})"
        cache = (
            f"cache {self.cache_dir} for {self.cache_ttl_s} s, at most {self.cache_max_bytes // (1024 * 1024)} MB"
            if self.cache_enabled
            else "cache off"
        )
        return f"{what}; {cache}; local images from {os.pathsep.join(self.allowed_paths)}"


def default_cache_dir(env: Mapping[str, str], *, platform: str, home: Path) -> Path:
    if platform == "win32":
        base = env.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "vision-bridge" / "Cache"
    if platform == "darwin":
        return home / "Library" / "Caches" / "vision-bridge"
    xdg = env.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "vision-bridge"


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(message)

    def number(
        self, env: Mapping[str, str], name: str, default: float, *, kind: type[int] | type[float], low: float
    ) -> float:
        raw = env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = kind(raw)
        except ValueError:
            self.add(f"{name}={raw!r} is not {'a whole number' if kind is int else 'a number'}")
            return default
        if value < low:
            self.add(f"{name}={raw!r} must be at least {low:g}")
            return default
        return value


def load_settings(
    env: Mapping[str, str],
    *,
    cwd: str | None = None,
    tempdir: str | None = None,
    home: Path | None = None,
    platform: str = sys.platform,
    host_flags: Sequence[str] = (),
    path_flags: Sequence[str] = (),
    structured_output: bool | None = None,
    max_message_mb: float | None = None,
) -> Settings:
    """Validate the environment (and the flags, which win over their variables); raise
    :class:`ConfigError` listing every problem found."""
    problems = _Problems()

    backend_choice = env.get("VISION_BACKEND", "").strip().lower() or "api"
    api_format = env.get("VISION_API_FORMAT", "").strip().lower() or "openai"
    backend: Backend = "openai"
    if backend_choice == "tesseract":
        backend = "tesseract"
    elif backend_choice != "api":
        problems.add(f"VISION_BACKEND={backend_choice!r} is not one of: api, tesseract")
    elif api_format in ("openai", "anthropic"):
        backend = api_format  # type: ignore[assignment]
    else:
        problems.add(f"VISION_API_FORMAT={api_format!r} is not one of: openai, anthropic")

    base_url = env.get("VISION_API_BASE_URL", "").strip()
    api_key = env.get("VISION_API_KEY", "").strip()
    model = env.get("VISION_MODEL", "").strip()
    if backend != "tesseract":
        missing = [
            name
            for name, value in (
                ("VISION_API_BASE_URL", base_url),
                ("VISION_API_KEY", api_key),
                ("VISION_MODEL", model),
            )
            if not value
        ]
        if missing:
            problems.add(
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set; the API backends need "
                "VISION_API_BASE_URL, VISION_API_KEY and VISION_MODEL "
                "(or set VISION_BACKEND=tesseract for offline OCR without a model)"
            )
        if base_url:
            parts = urlsplit(base_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                problems.add(f"VISION_API_BASE_URL={base_url!r} is not an http(s) URL")
        base_url = base_url.rstrip("/")

    max_tokens = int(problems.number(env, "VISION_MAX_TOKENS", DEFAULT_MAX_TOKENS, kind=int, low=1))
    timeout_s = float(problems.number(env, "VISION_TIMEOUT", DEFAULT_TIMEOUT_S, kind=float, low=0.001))
    max_retries = int(problems.number(env, "VISION_MAX_RETRIES", DEFAULT_MAX_RETRIES, kind=int, low=0))
    # Zero or a negative TTL turns the cache off, as in the reference.
    cache_ttl = int(problems.number(env, "VISION_CACHE_TTL", DEFAULT_CACHE_TTL_S, kind=int, low=-(2**62)))
    cache_max_mb = int(problems.number(env, "VISION_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, kind=int, low=1))
    decode_mb = int(
        problems.number(env, "VISION_DECODE_MEMORY_MB", DEFAULT_DECODE_MEMORY_MB, kind=int, low=64)
    )
    side_raw = env.get("VISION_MAX_IMAGE_SIDE", "").strip()
    max_side = int(problems.number(env, "VISION_MAX_IMAGE_SIDE", 0, kind=int, low=16)) if side_raw else 0

    home = home or Path.home()
    cache_raw = env.get("VISION_CACHE_DIR", "").strip()
    cache_dir = (
        Path(os.path.expanduser(cache_raw)).absolute()
        if cache_raw
        else default_cache_dir(env, platform=platform, home=home)
    )

    allowed, follow_roots = _allowed_paths(
        env, problems, path_flags, cwd=cwd or os.getcwd(), tempdir=tempdir or tempfile.gettempdir(), home=home
    )
    hosts, url_images = _hosts(env, problems, host_flags)
    structured = True
    try:
        structured = switch(ACCESS.structured_output, structured_output, env)
    except SettingError as exc:
        problems.add(str(exc))
    max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES
    try:
        max_message_bytes = message_cap(ACCESS.max_message, max_message_mb, env)
    except SettingError as exc:
        problems.add(str(exc))
    tesseract_cmd = env.get("VISION_TESSERACT_CMD", "").strip() or "tesseract"

    if problems.items:
        raise ConfigError("\n".join(f"  - {item}" for item in problems.items))
    return Settings(
        backend=backend,
        base_url=base_url,
        api_key=api_key,
        model=model,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        max_retries=max_retries,
        cache_ttl_s=max(0, cache_ttl),
        cache_dir=cache_dir,
        cache_max_bytes=cache_max_mb * 1024 * 1024,
        allowed_paths=allowed,
        allow_hosts=hosts,
        max_image_side=max_side or None,
        tesseract_cmd=tesseract_cmd,
        follow_roots=follow_roots,
        url_images=url_images,
        structured_output=structured,
        max_message_bytes=max_message_bytes,
        decode_memory_bytes=decode_mb << 20,
    )


def _allowed_paths(
    env: Mapping[str, str],
    problems: _Problems,
    flags: Sequence[str],
    *,
    cwd: str,
    tempdir: str,
    home: Path,
) -> tuple[tuple[str, ...], bool]:
    """The folders local images may come from, and whether the client's roots replace them (no
    folder was given, so these are the defaults)."""
    try:
        paths = given(ACCESS.paths, {ACCESS.paths.flag: list(flags)}, env, separator=os.pathsep)
        if paths is not None:
            return path_policy(paths, ACCESS).roots, False
    except SettingError as exc:
        problems.add(str(exc))
        return (), False
    # Desktop hosts often start servers in "/": that default would open the whole disk.
    working = Path(cwd).resolve()
    dirs = [str(home) if working.parent == working else cwd, tempdir]
    try:
        return PathPolicy.from_dirs(dirs, what="default folder").roots, True
    except ValueError as exc:
        problems.add(str(exc))
        return (), True


def _hosts(env: Mapping[str, str], problems: _Problems, flags: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """The hosts image URLs may reach on internal addresses, and whether image URLs are allowed."""
    try:
        hosts = given(ACCESS.hosts, {ACCESS.hosts.flag: list(flags)}, env, separator=",")
        if hosts is None:
            return (), True
        policy = host_policy(hosts, ACCESS, open_by_default=True)
        if not policy.allows_urls:
            return (), False
        values = [value.strip() for value in hosts.values if value.strip() and value.strip().lower() != "all"]
        return tuple(dict.fromkeys(check_host(value, hosts.source) for value in values)), True
    except SettingError as exc:
        problems.add(str(exc))
        return (), True
