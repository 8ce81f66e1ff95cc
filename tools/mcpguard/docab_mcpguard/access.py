"""One way to allow hosts and paths on every docab server: the same words as a flag and as an
environment variable.

Each server names its settings from one prefix (:func:`server_settings`):

| setting | flag | variable | lists several values |
|---|---|---|---|
| hosts | ``--allow-host`` (repeatable) | ``<PREFIX>_ALLOW_HOSTS`` | comma-separated |
| paths | ``--allow-path`` (repeatable) | ``<PREFIX>_ALLOW_PATHS`` | ``os.pathsep``-separated |
| structured output | ``--structured-output`` / ``--no-structured-output`` | ``<PREFIX>_STRUCTURED_OUTPUT`` | |
| message size cap | ``--max-message-mb`` | ``<PREFIX>_MAX_MESSAGE_MB`` | |

A flag wins over the variable; the names earlier releases and the JavaScript servers used
(md-vision's ``--allow-domain``, ``MARKFETCH_ALLOWED_WRITE_ROOTS``, ``VISION_ALLOWED_PATHS``)
are read as the same setting, and a variable set under both names with different values is an
error rather than a guess. Host values are ``all`` (any public host), ``none`` (no URLs) or host
names (a host allows its subdomains; a host named here may also be on a loopback, private or
link-local address, which is otherwise refused). The policies built here carry their remedy, so
every refusal ends with the setting that lifts it. Everything here is pure: the caller passes
the flags it parsed and the environment.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from docab_mcpguard.hosts import HostPolicy, normalise_host
from docab_mcpguard.paths import PathPolicy


class SettingError(ValueError):
    """A setting's value is unusable; the message names the flag or variable and the fix."""


@dataclass(frozen=True)
class Setting:
    """One setting spelled two ways with the same words: ``flag`` and ``variable``.

    ``legacy_flags`` and ``legacy_variables`` are older names read as the same setting.
    """

    flag: str
    variable: str
    legacy_flags: tuple[str, ...] = ()
    legacy_variables: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The argparse destination of the flag."""
        return self.flag.lstrip("-").replace("-", "_")

    def spelled(self, value: str = "") -> str:
        """``--allow-path DIR (or MARKFETCH_ALLOW_PATHS, formerly MARKFETCH_ALLOWED_WRITE_ROOTS)``:
        the spellings, for messages."""
        shown = f" {value}" if value else ""
        older = f", formerly {' or '.join(self.legacy_variables)}" if self.legacy_variables else ""
        return f"{self.flag}{shown} (or {self.variable}{older})"


@dataclass(frozen=True)
class ServerSettings:
    """The access settings of one server (see the module's table)."""

    server: str  # the program's name, for messages: "md-vision"
    hosts: Setting
    paths: Setting
    structured_output: Setting
    max_message: Setting = Setting("--max-message-mb", "MAX_MESSAGE_MB")


def server_settings(
    server: str,
    prefix: str,
    *,
    host_flags: tuple[str, ...] = (),
    host_variables: tuple[str, ...] = (),
    path_variables: tuple[str, ...] = (),
) -> ServerSettings:
    """The settings of ``server``, its variables named from ``prefix`` (``MD_VISION``), with the
    older names it still reads."""
    return ServerSettings(
        server=server,
        hosts=Setting("--allow-host", f"{prefix}_ALLOW_HOSTS", host_flags, host_variables),
        paths=Setting("--allow-path", f"{prefix}_ALLOW_PATHS", (), path_variables),
        structured_output=Setting("--structured-output", f"{prefix}_STRUCTURED_OUTPUT"),
        max_message=Setting("--max-message-mb", f"{prefix}_MAX_MESSAGE_MB"),
    )


# -- command lines --------------------------------------------------------------------------------


def add_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    settings: ServerSettings,
    *,
    hosts_help: str,
    paths_help: str,
) -> None:
    """Add the three settings' flags (and the older host flags) to ``parser``."""
    parser.add_argument(
        settings.hosts.flag,
        action="append",
        default=[],
        dest=settings.hosts.dest,
        metavar="all|none|HOST",
        help=f"{hosts_help} (repeatable; env {settings.hosts.variable}, comma-separated)",
    )
    for legacy in settings.hosts.legacy_flags:
        parser.add_argument(
            legacy,
            action="append",
            default=[],
            dest=legacy.lstrip("-").replace("-", "_"),
            metavar="all|none|HOST",
            help=f"the same as {settings.hosts.flag} (the name the JavaScript server used)",
        )
    parser.add_argument(
        settings.paths.flag,
        action="append",
        default=[],
        dest=settings.paths.dest,
        metavar="DIR",
        help=f"{paths_help} (repeatable; env {settings.paths.variable}, separated by {os.pathsep!r})",
    )
    parser.add_argument(
        settings.structured_output.flag,
        action=argparse.BooleanOptionalAction,
        default=None,
        dest=settings.structured_output.dest,
        help="declare output schemas and send structuredContent beside the text (default on; "
        f"env {settings.structured_output.variable}=0 or --no-structured-output for clients that then "
        "show the model only the structured part)",
    )
    parser.add_argument(
        settings.max_message.flag,
        type=float,
        default=None,
        dest=settings.max_message.dest,
        metavar="MB",
        help=f"largest JSON-RPC message read from stdin, in MB (default {DEFAULT_MAX_MESSAGE_MB:g}; env "
        f"{settings.max_message.variable}); a longer one is answered with an error and skipped",
    )


def flag_values(setting: Setting, namespace: argparse.Namespace) -> dict[str, list[str]]:
    """The values each spelling of ``setting``'s flag was given, from a parsed command line."""
    values: dict[str, list[str]] = {}
    for name in (setting.flag, *setting.legacy_flags):
        given = getattr(namespace, name.lstrip("-").replace("-", "_"), None) or []
        values[name] = [str(value) for value in given]
    return values


# -- reading values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Given:
    """The values a setting was given and where they came from (named in every message)."""

    values: tuple[str, ...]
    source: str  # the flag or variable: "--allow-domain", "VISION_ALLOWED_PATHS"
    from_flag: bool


def given(
    setting: Setting, flags: Mapping[str, Sequence[str]], env: Mapping[str, str], *, separator: str
) -> Given | None:
    """The values of ``setting``: from its flags (all spellings together) if any were given, else
    from its variable, else from an older variable; None when nowhere.

    A variable set under its name and an older name with different values is a SettingError.
    """
    spelled = [(name, list(flags.get(name, ()))) for name in (setting.flag, *setting.legacy_flags)]
    used = [(name, values) for name, values in spelled if values]
    if used:
        source = used[0][0] if len(used) == 1 else setting.flag
        return Given(tuple(value for _name, values in used for value in values), source, True)
    found = [
        (name, env[name])
        for name in (setting.variable, *setting.legacy_variables)
        if env.get(name, "").strip()
    ]
    if not found:
        return None
    name, raw = found[0]
    for other, other_raw in found[1:]:
        if other_raw.strip() != raw.strip():
            raise SettingError(
                f"{name} and {other} are both set, to different values; they are the same setting "
                f"({other} is its older name): keep only {name}"
            )
    return Given(tuple(entry.strip() for entry in raw.split(separator)), name, False)


DEFAULT_MAX_MESSAGE_MB = 16.0
DEFAULT_MAX_MESSAGE_BYTES = int(DEFAULT_MAX_MESSAGE_MB * 1_000_000)


def message_cap(setting: Setting, flag: float | None, env: Mapping[str, str]) -> int:
    """The message size cap in bytes: the flag if given, else the variable, else 16 MB."""
    if flag is not None:
        value, source = flag, setting.flag
    else:
        raw = env.get(setting.variable, "").strip()
        if not raw:
            return DEFAULT_MAX_MESSAGE_BYTES
        try:
            value, source = float(raw), setting.variable
        except ValueError:
            raise SettingError(f"{setting.variable}={raw!r} is not a number of megabytes (e.g. 16)") from None
    if not value >= 0.001 or value != value or value == float("inf"):
        raise SettingError(f"{source} must be a number of megabytes of at least 0.001, got {value!r}")
    return int(value * 1_000_000)


def switch(setting: Setting, flag: bool | None, env: Mapping[str, str], *, default: bool = True) -> bool:
    """An on/off setting: the flag if given, else the variable (1/0, true/false, on/off, yes/no)."""
    if flag is not None:
        return flag
    raw = env.get(setting.variable, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "on", "yes"):
        return True
    if raw in ("0", "false", "off", "no"):
        return False
    raise SettingError(
        f"{setting.variable}={env[setting.variable]!r} is not on or off; use 1 or 0 (true/false, on/off)"
    )


# -- paths ---------------------------------------------------------------------------------------


def path_remedy(settings: ServerSettings, *, client_roots: bool = False) -> str:
    """How another folder is allowed: the setting, and on a server following its client's roots,
    the client's roots first."""
    setting = settings.paths.spelled("DIR")
    if client_roots:
        return (
            f"add the folder to your MCP client's roots, or start {settings.server} with {setting}, "
            "which then replaces the client's roots"
        )
    return f"to allow another folder, start {settings.server} with {setting}"


def path_policy(given_paths: Given, settings: ServerSettings) -> PathPolicy:
    """Folders from a flag or a variable. A variable lists absolute folders (its server's working
    folder is often not the user's: an MCP host chooses it); a flag's relative folders are taken
    from the current folder, as a shell would. Raises SettingError naming the source."""
    what = f"{given_paths.source} entry" if not given_paths.from_flag else given_paths.source
    if not given_paths.from_flag and not all(given_paths.values):
        raise SettingError(
            f"{given_paths.source} has an empty entry; list absolute folders separated by "
            f"{os.pathsep!r}, with nothing empty between or around the separators"
        )
    try:
        return PathPolicy.from_dirs(
            given_paths.values,
            what=what,
            remedy=path_remedy(settings),
            absolute=not given_paths.from_flag,
        )
    except ValueError as exc:
        raise SettingError(str(exc)) from None


# -- hosts ---------------------------------------------------------------------------------------

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


def normalise_host_value(value: str) -> str:
    """One host value as the JavaScript md-vision read it: quotes around it dropped (a config that
    passed ``"*"`` through no shell), ``*`` is ``all``, ``*.example.com`` is ``example.com`` (a host
    already allows its subdomains)."""
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


def shell_expansion_error(
    values: Iterable[str], local_names: frozenset[str] = frozenset(), *, flag: str = "--allow-host"
) -> str | None:
    """The start-up message when host values given to ``flag`` are the names of local files, as
    when an unquoted ``*`` is expanded by the shell (``--allow-host package.json README.md``).

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
        f"{flag} got {shown}, which look like file names: an unquoted * was probably expanded by "
        f"the shell into the files of this folder. Write `{flag} all` for any public host (or quote "
        f"it: {flag} '*'), `none` for no URLs, or name hosts such as example.com."
    )


def check_host(value: str, source: str) -> str:
    """A host value, normalised; raises SettingError naming ``source`` when it is not a host."""
    if not value:
        raise SettingError(f"an empty {source} value was given")
    if "*" in value:
        raise SettingError(
            f"{source} {value!r}: a wildcard can only be `*` (any host, like `all`) or lead the "
            "name (`*.example.com`, the same as example.com, which also allows its subdomains)"
        )
    if "://" in value or "/" in value:
        raise SettingError(
            f"{source} {value!r} is not a host name or IP address: give a host such as example.com, "
            "not a URL or path"
        )
    host = value
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    elif host.count(":") == 1:
        raise SettingError(f"{source} {value!r}: give the host without a port")
    normalised = normalise_host(host)
    if not normalised or any(char.isspace() or char in ",;'\"" for char in normalised):
        raise SettingError(f"{source} {value!r} is not a valid host name")
    return normalised


def host_remedy(settings: ServerSettings) -> str:
    """How a host is allowed (``{host}`` is filled in by :meth:`HostPolicy.lift`)."""
    return settings.hosts.spelled("{host}")


def host_policy(
    given_hosts: Given | None,
    settings: ServerSettings,
    *,
    open_by_default: bool,
    local_names: frozenset[str] = frozenset(),
) -> HostPolicy:
    """The hosts a server may fetch. ``open_by_default``: any public host is allowed whatever is
    listed (markfetch, vision-bridge: naming hosts there lets them reach internal addresses);
    otherwise only the hosts listed, ``all`` or ``none`` (md-vision, as the JavaScript server).

    ``none`` stands alone; so does ``all`` where hosts are an allow-list. Values given on a
    command line that look like file names (a ``*`` the shell expanded; ``local_names`` are the
    working folder's entries) are refused. Raises SettingError naming the flag or variable.
    """
    remedy = host_remedy(settings)
    if given_hosts is None or not given_hosts.values:
        if open_by_default:
            return HostPolicy.build(allow_any=True, remedy=remedy)
        raise SettingError(f"{settings.hosts.flag} is required")
    source = given_hosts.source
    raw = [value.strip() for value in given_hosts.values]
    if given_hosts.from_flag:
        expanded = shell_expansion_error(raw, local_names, flag=source)
        if expanded is not None:
            raise SettingError(expanded)
    values = [normalise_host_value(value) for value in raw if value or given_hosts.from_flag]
    lowered = [value.lower() for value in values]
    if "none" in lowered and len(values) > 1:
        raise SettingError(f"{source} none must stand alone; it cannot be combined with other values")
    if "all" in lowered and len(values) > 1 and not open_by_default:
        raise SettingError(f"{source} all must stand alone; it cannot be combined with other values")
    if lowered == ["none"]:
        return HostPolicy.build(remedy=remedy)
    hosts = list(dict.fromkeys(check_host(value, source) for value in values if value.lower() != "all"))
    if open_by_default or "all" in lowered:
        return HostPolicy.build(allow_any=True, internal_hosts=hosts, remedy=remedy)
    # A host named explicitly may reach internal addresses (e.g. 127.0.0.1 for a local docs
    # server); `all` and suffix matches never do.
    return HostPolicy.build(domains=hosts, internal_hosts=hosts, remedy=remedy)


def urls_disabled(settings: ServerSettings) -> str:
    """The refusal of a URL on a server started with ``none``."""
    return (
        f"URLs are disabled on this server ({settings.hosts.flag} none); pass a local path, or start "
        f"{settings.server} with {settings.hosts.spelled('HOST')}"
    )
