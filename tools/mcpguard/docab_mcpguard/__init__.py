"""What every read-only MCP server here needs to stay inside its sandbox.

One implementation, used by md_vision, markfetch and vision_bridge:

- :class:`PathPolicy` confines local paths to allowed roots: :meth:`PathPolicy.open` walks
  beneath a root one component at a time by descriptor (``openat``, ``O_NOFOLLOW``), resolving
  links itself, so a folder swapped for a symlink mid-call cannot lead outside; the caller
  reads, stats and lists through the returned :class:`Opened`. :func:`write_file_in` creates
  a file in a held folder (temporary file, then a rename within that folder).
- :func:`classify_address` sorts an IP into public / loopback / private / link-local / metadata ...
- :class:`HostPolicy` decides which URL hosts may be fetched and which may reach internal addresses.
- :class:`GuardedClient` fetches over HTTP(S) (on ``httpx2``) with every redirect hop re-checked,
  the address checked at connect time (so DNS rebinding cannot slip past), a byte cap on the
  decoded body (content codings decoded here in bounded steps: a decompression bomb stops at
  the cap without stalling the event loop) and one deadline for the whole fetch.
  :func:`check_target` answers whether a URL would be fetched, for callers that
  hand URLs to someone else.
- :class:`DiskCache` keeps cached answers private (0700 folder, 0600 files), written atomically
  and read back only within their time-to-live.

:func:`run_until_stopped` runs a stdio server so that end of input, Ctrl-C and SIGTERM all end
it quietly, with its clean-up run.

Every exception raised here derives from :class:`GuardError` and carries a message that is safe
and useful to show to a user or a model.
"""

import importlib
from typing import TYPE_CHECKING, Any

from docab_mcpguard.addresses import AddressClass, classify_address, is_internal
from docab_mcpguard.beneath import RACE_FREE, Opened, write_file_in
from docab_mcpguard.errors import FetchError, FetchErrorKind, GuardError, HostDenied, PathDenied
from docab_mcpguard.hosts import HostPolicy, normalise_host
from docab_mcpguard.paths import PathPolicy
from docab_mcpguard.stopping import run_until_stopped

if TYPE_CHECKING:
    from docab_mcpguard.decoding import MAX_CODINGS, SUPPORTED_CODINGS, BodyDecoder, UndecodableBody
    from docab_mcpguard.diskcache import DiskCache, Stored
    from docab_mcpguard.http import (
        Fetched,
        FetchLimits,
        FetchProgress,
        GuardedClient,
        Resolver,
        SystemResolver,
        check_target,
    )

# The HTTP stack (httpx2, brotli, zstd) loads on first use: a server's --help, or a program that
# only reads its settings through docab_mcpguard.access, does not pay for it.
_LAZY = {
    "MAX_CODINGS": "docab_mcpguard.decoding",
    "SUPPORTED_CODINGS": "docab_mcpguard.decoding",
    "BodyDecoder": "docab_mcpguard.decoding",
    "UndecodableBody": "docab_mcpguard.decoding",
    "DiskCache": "docab_mcpguard.diskcache",
    "Stored": "docab_mcpguard.diskcache",
    "Fetched": "docab_mcpguard.http",
    "FetchLimits": "docab_mcpguard.http",
    "FetchProgress": "docab_mcpguard.http",
    "GuardedClient": "docab_mcpguard.http",
    "Resolver": "docab_mcpguard.http",
    "SystemResolver": "docab_mcpguard.http",
    "check_target": "docab_mcpguard.http",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'docab_mcpguard' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "MAX_CODINGS",
    "RACE_FREE",
    "SUPPORTED_CODINGS",
    "AddressClass",
    "BodyDecoder",
    "DiskCache",
    "FetchError",
    "FetchErrorKind",
    "FetchLimits",
    "FetchProgress",
    "Fetched",
    "GuardError",
    "GuardedClient",
    "HostDenied",
    "HostPolicy",
    "Opened",
    "PathDenied",
    "PathPolicy",
    "Resolver",
    "Stored",
    "SystemResolver",
    "UndecodableBody",
    "check_target",
    "classify_address",
    "is_internal",
    "normalise_host",
    "run_until_stopped",
    "write_file_in",
]
