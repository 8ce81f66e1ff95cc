"""Settings from the environment, validated once at start-up.

Every variable is optional. A bad value stops the program before it serves anything, with a
message that names the variable, the value and what would be accepted (:class:`ConfigError`).

| variable | default | meaning |
|---|---|---|
| MARKFETCH_TIMEOUT_MS | 30000 | budget for one fetch: every redirect hop, headers and body |
| MARKFETCH_MAX_BYTES | 5000000 | cap on the response body (counted on the stream) and on the output |
| MARKFETCH_EXTRACT_TIMEOUT_MS | 30000 | budget for extracting one page (in a worker process, killed at the deadline) |
| MARKFETCH_EXTRACT_WORKERS | min(2, CPUs) | worker processes extracting pages at once; more calls wait (8 per worker, each at most the extraction budget) |
| MARKFETCH_EXTRACT_MEMORY_MB | 2048 | memory an extraction worker may add to what it maps at start (0: no cap; where rlimits exist) |
| MARKFETCH_USER_AGENT | Chrome 136 on Windows | a Chrome User-Agent; the client hints are derived from it |
| MARKFETCH_ACCEPT_LANGUAGE | en-US,en;q=0.9 | the Accept-Language header |
| MARKFETCH_ALLOW_HOSTS | (none) | comma-separated host names or IPs allowed to reach internal addresses (flag: --allow-host) |
| MARKFETCH_PROXY_URL | (none) | http://, https:// or socks5:// proxy for every request |
| MARKFETCH_CACHE_TTL | 0 (off) | seconds a fetched response is reused from the on-disk cache |
| MARKFETCH_CACHE_DIR | ~/.cache/markfetch | where the cache lives (used only when the TTL is above 0) |
| MARKFETCH_CACHE_MAX_MB | 256 | cap on the cache folder in MB: expired entries are pruned, then the oldest responses |
| MARKFETCH_ALLOW_PATHS | temp dir + working dir | MCP only: where savePath may write (os.pathsep-separated; flag: --allow-path; older name MARKFETCH_ALLOWED_WRITE_ROOTS) |
| MARKFETCH_STRUCTURED_OUTPUT | 1 | MCP only: 0 drops the output schema and structuredContent (flag: --no-structured-output) |

Hosts and paths are named as on every docab server (:data:`ACCESS`, from
:mod:`docab_mcpguard.access`): a flag and a variable with the same words, the flag winning.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docab_mcpguard import HostPolicy, PathPolicy
from docab_mcpguard.access import (
    SettingError,
    check_host,
    given,
    host_policy,
    host_remedy,
    path_policy,
    path_remedy,
    server_settings,
)
from markfetch.errors import ConfigError
from markfetch.headers import (
    DEFAULT_ACCEPT_LANGUAGE,
    DEFAULT_USER_AGENT,
    ChromeProfile,
    validate_accept_language,
)

MAX_TIMEOUT_MS = 10 * 60 * 1000
ACCESS = server_settings("markfetch", "MARKFETCH", path_variables=("MARKFETCH_ALLOWED_WRITE_ROOTS",))
_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


DEFAULT_CACHE_MAX_MB = 256
DEFAULT_EXTRACT_MEMORY_MB = 2048
MAX_EXTRACT_WORKERS = 64


def default_workers() -> int:
    """min(2, the CPUs this process may use): extraction is CPU work, more would only share them."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus))


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
    cache_max_bytes: int = DEFAULT_CACHE_MAX_MB * 1024 * 1024
    extract_timeout_ms: int = 30_000
    extract_workers: int = field(default_factory=default_workers)
    extract_memory_mb: int = DEFAULT_EXTRACT_MEMORY_MB  # 0: no cap

    @property
    def chrome(self) -> ChromeProfile:
        return ChromeProfile.from_user_agent(self.user_agent)

    @property
    def hosts(self) -> HostPolicy:
        """Any public host; the hosts listed may also be on internal addresses."""
        return HostPolicy.build(allow_any=True, internal_hosts=self.allow_hosts, remedy=host_remedy(ACCESS))


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


def _memory_mb(env: Mapping[str, str]) -> int:
    name = "MARKFETCH_EXTRACT_MEMORY_MB"
    if env.get(name, "").strip() == "0":
        return 0  # no cap
    return _positive_int(env, name, DEFAULT_EXTRACT_MEMORY_MB)


def allow_hosts(env: Mapping[str, str], flags: Sequence[str] = ()) -> tuple[str, ...]:
    """The hosts that may reach internal addresses: ``--allow-host`` values, else
    MARKFETCH_ALLOW_HOSTS (comma-separated); any public host is allowed anyway. ``all`` changes
    nothing; ``none`` is refused (markfetch would fetch nothing)."""
    try:
        hosts = given(ACCESS.hosts, {ACCESS.hosts.flag: list(flags)}, env, separator=",")
        if hosts is None:
            return ()
        values = [value for value in hosts.values if value or hosts.from_flag]
        if [value.strip().lower() for value in values] == ["none"]:
            raise SettingError(
                f"{hosts.source} none would refuse every URL, and fetching URLs is all markfetch does; "
                "markfetch allows any public host anyway: name only the hosts that may be on internal "
                "addresses (e.g. localhost,127.0.0.1)"
            )
        host_policy(hosts, ACCESS, open_by_default=True)  # the same checks as every server
        return tuple(
            dict.fromkeys(check_host(v.strip(), hosts.source) for v in values if v.strip().lower() != "all")
        )
    except SettingError as exc:
        raise ConfigError(str(exc)) from None


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


def load_settings(env: Mapping[str, str], *, host_flags: Sequence[str] = ()) -> Settings:
    """Read and validate every MARKFETCH_* variable (except the MCP-only write roots);
    ``host_flags``: the ``--allow-host`` values, which win over MARKFETCH_ALLOW_HOSTS."""
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
        allow_hosts=allow_hosts(env, host_flags),
        proxy=_proxy(env.get("MARKFETCH_PROXY_URL", "")),
        cache_ttl_s=cache_ttl_s,
        cache_dir=cache_dir,
        cache_max_bytes=_positive_int(env, "MARKFETCH_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB) * 1024 * 1024,
        extract_timeout_ms=_positive_int(env, "MARKFETCH_EXTRACT_TIMEOUT_MS", 30_000, maximum=MAX_TIMEOUT_MS),
        extract_workers=_positive_int(
            env, "MARKFETCH_EXTRACT_WORKERS", default_workers(), maximum=MAX_EXTRACT_WORKERS
        ),
        extract_memory_mb=_memory_mb(env),
    )


def write_roots(env: Mapping[str, str], *, cwd: str | None = None, flags: Sequence[str] = ()) -> list[str]:
    """MCP savePath roots: ``--allow-path`` values, else MARKFETCH_ALLOW_PATHS (or its older name
    MARKFETCH_ALLOWED_WRITE_ROOTS) when set (it replaces the default), else temp + cwd.

    A variable's entries must be absolute paths; they are resolved to real paths, and checked to
    be existing folders, by :func:`write_policy`.
    """
    try:
        paths = given(ACCESS.paths, {ACCESS.paths.flag: list(flags)}, env, separator=os.pathsep)
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    if paths is None:
        return [tempfile.gettempdir(), cwd or os.getcwd()]
    if not paths.from_flag:
        if not all(paths.values):
            # An empty entry is a typo (":/tmp", "/a::/b"), not a wish to allow the working folder.
            raise ConfigError(
                f"{paths.source}={env[paths.source]!r} has an empty entry; list absolute directories "
                f"separated by {os.pathsep!r}, with nothing empty between or around the separators"
            )
        for entry in paths.values:
            if not os.path.isabs(os.path.expanduser(entry)):
                raise ConfigError(
                    f"{paths.source} entry {entry!r} is not an absolute path; "
                    f"list absolute directories separated by {os.pathsep!r}"
                )
    return list(paths.values)


def write_policy(env: Mapping[str, str], *, flags: Sequence[str] = ()) -> PathPolicy:
    """The folders savePath may write in (see :func:`write_roots`), every refusal naming the
    setting that allows more; raises ConfigError."""
    try:
        paths = given(ACCESS.paths, {ACCESS.paths.flag: list(flags)}, env, separator=os.pathsep)
        if paths is None:
            return PathPolicy.from_dirs(write_roots(env), what="write root", remedy=path_remedy(ACCESS))
        write_roots(env, flags=flags)  # the messages above for a variable's empty or relative entries
        return path_policy(paths, ACCESS)
    except (SettingError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
