"""Settings from the environment, validated once at start-up.

Every variable is optional. A bad value stops the program before it serves anything, with a
message that names the variable, the value and what would be accepted (:class:`ConfigError`).

| variable | default | meaning |
|---|---|---|
| MARKFETCH_TIMEOUT_MS | 30000 | budget for one fetch: every redirect hop, headers and body |
| MARKFETCH_MAX_BYTES | 5000000 | cap on the response body (counted on the stream) and on the output |
| MARKFETCH_USER_AGENT | Chrome 136 on Windows | a Chrome User-Agent; the client hints are derived from it |
| MARKFETCH_ACCEPT_LANGUAGE | en-US,en;q=0.9 | the Accept-Language header |
| MARKFETCH_ALLOW_HOSTS | (none) | comma-separated host names or IPs allowed to reach internal addresses |
| MARKFETCH_PROXY_URL | (none) | http://, https:// or socks5:// proxy for every request |
| MARKFETCH_CACHE_TTL | 0 (off) | seconds a fetched response is reused from the on-disk cache |
| MARKFETCH_CACHE_DIR | ~/.cache/markfetch | where the cache lives (used only when the TTL is above 0) |
| MARKFETCH_ALLOWED_WRITE_ROOTS | temp dir + working dir | MCP only: where savePath may write (os.pathsep-separated) |
"""

from __future__ import annotations

import ipaddress
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markfetch.errors import ConfigError
from markfetch.headers import (
    DEFAULT_ACCEPT_LANGUAGE,
    DEFAULT_USER_AGENT,
    ChromeProfile,
    validate_accept_language,
)

MAX_TIMEOUT_MS = 10 * 60 * 1000
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$"
)
_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


@dataclass(frozen=True)
class Settings:
    timeout_ms: int = 30_000
    max_bytes: int = 5_000_000
    user_agent: str = DEFAULT_USER_AGENT
    accept_language: str = DEFAULT_ACCEPT_LANGUAGE
    allow_hosts: tuple[str, ...] = ()
    proxy: str | None = None
    cache_ttl_s: int = 0
    cache_dir: Path | None = None  # set only when the cache is on

    @property
    def chrome(self) -> ChromeProfile:
        return ChromeProfile.from_user_agent(self.user_agent)


def _positive_int(env: Mapping[str, str], name: str, default: int, *, maximum: int | None = None) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a whole number; expected a positive integer such as {default}"
        ) from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be above 0 (default {default})")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name}={raw!r} is above the maximum of {maximum}")
    return value


def _allow_hosts(raw: str) -> tuple[str, ...]:
    hosts: list[str] = []
    for entry in raw.split(","):
        host = entry.strip().lower()
        if not host:
            continue
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        try:
            ipaddress.ip_address(bare)
        except ValueError:
            if "://" in host or "/" in host or not _HOST_NAME.match(host):
                raise ConfigError(
                    f"MARKFETCH_ALLOW_HOSTS entry {entry.strip()!r} is not a host name or IP address; "
                    "give bare hosts separated by commas, for example 'localhost,127.0.0.1'"
                ) from None
        hosts.append(bare)
    return tuple(dict.fromkeys(hosts))


def _proxy(raw: str) -> str | None:
    raw = raw.strip()
    if not raw:
        return None
    import httpx2

    try:
        url = httpx2.URL(raw)
    except (httpx2.InvalidURL, ValueError):
        raise ConfigError(f"MARKFETCH_PROXY_URL={raw!r} is not a URL") from None
    if url.scheme not in _PROXY_SCHEMES or not url.host:
        raise ConfigError(
            f"MARKFETCH_PROXY_URL={raw!r} must be an http://, https:// or socks5:// URL with a host, "
            "for example http://proxy.example:3128"
        )
    if url.scheme.startswith("socks"):
        import importlib.util

        if importlib.util.find_spec("socksio") is None:
            raise ConfigError(
                "MARKFETCH_PROXY_URL is a SOCKS proxy, which needs the socksio package: pip install socksio"
            )
    return raw


def _cache(env: Mapping[str, str]) -> tuple[int, Path | None]:
    ttl = env.get("MARKFETCH_CACHE_TTL", "").strip()
    if not ttl or ttl == "0":
        return 0, None
    seconds = _positive_int(env, "MARKFETCH_CACHE_TTL", 0)
    raw_dir = env.get("MARKFETCH_CACHE_DIR", "").strip()
    if raw_dir:
        directory = Path(os.path.expanduser(raw_dir))
        if not directory.is_absolute():
            raise ConfigError(f"MARKFETCH_CACHE_DIR={raw_dir!r} must be an absolute path")
    else:
        base = env.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
        directory = Path(base) / "markfetch"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"the cache folder {str(directory)!r} cannot be created ({exc.strerror or 'error'})"
        ) from None
    if not os.access(directory, os.W_OK):
        raise ConfigError(f"the cache folder {str(directory)!r} is not writable")
    return seconds, directory


def load_settings(env: Mapping[str, str]) -> Settings:
    """Read and validate every MARKFETCH_* variable (except the MCP-only write roots)."""
    user_agent = env.get("MARKFETCH_USER_AGENT", "").strip() or DEFAULT_USER_AGENT
    try:
        ChromeProfile.from_user_agent(user_agent)
    except ValueError as exc:
        raise ConfigError(f"MARKFETCH_USER_AGENT is not usable: {exc}") from None
    accept_language = env.get("MARKFETCH_ACCEPT_LANGUAGE", "").strip() or DEFAULT_ACCEPT_LANGUAGE
    try:
        accept_language = validate_accept_language(accept_language)
    except ValueError as exc:
        raise ConfigError(f"MARKFETCH_ACCEPT_LANGUAGE={accept_language!r} is not usable: {exc}") from None
    cache_ttl_s, cache_dir = _cache(env)
    return Settings(
        timeout_ms=_positive_int(env, "MARKFETCH_TIMEOUT_MS", 30_000, maximum=MAX_TIMEOUT_MS),
        max_bytes=_positive_int(env, "MARKFETCH_MAX_BYTES", 5_000_000),
        user_agent=user_agent,
        accept_language=accept_language,
        allow_hosts=_allow_hosts(env.get("MARKFETCH_ALLOW_HOSTS", "")),
        proxy=_proxy(env.get("MARKFETCH_PROXY_URL", "")),
        cache_ttl_s=cache_ttl_s,
        cache_dir=cache_dir,
    )


def write_roots(env: Mapping[str, str], *, cwd: str | None = None) -> list[str]:
    """MCP savePath roots: MARKFETCH_ALLOWED_WRITE_ROOTS when set (it replaces the default), else temp + cwd.

    Entries must be absolute paths of existing directories; they are resolved to real paths by
    :class:`docab_mcpguard.PathPolicy`.
    """
    raw = env.get("MARKFETCH_ALLOWED_WRITE_ROOTS", "")
    if not raw.strip():
        return [tempfile.gettempdir(), cwd or os.getcwd()]
    entries = [entry.strip() for entry in raw.split(os.pathsep)]
    if not all(entries):
        # An empty entry is a typo (":/tmp", "/a::/b"), not a wish to allow the working folder.
        raise ConfigError(
            f"MARKFETCH_ALLOWED_WRITE_ROOTS={raw!r} has an empty entry; list absolute directories "
            f"separated by {os.pathsep!r}, with nothing empty between or around the separators"
        )
    for entry in entries:
        if not os.path.isabs(entry):
            raise ConfigError(
                f"MARKFETCH_ALLOWED_WRITE_ROOTS entry {entry!r} is not an absolute path; "
                f"list absolute directories separated by {os.pathsep!r}"
            )
    return entries
