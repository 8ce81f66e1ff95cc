"""What every read-only MCP server here needs to stay inside its sandbox.

One implementation, used by md_vision, markfetch and vision_bridge:

- :class:`PathPolicy` confines local paths to allowed roots, checked on real paths
  (symlinks and ``..`` resolved before the containment test).
- :func:`classify_address` sorts an IP into public / loopback / private / link-local / metadata ...
- :class:`HostPolicy` decides which URL hosts may be fetched and which may reach internal addresses.
- :class:`GuardedClient` fetches over HTTP(S) with every redirect hop re-checked, the address
  checked at connect time (so DNS rebinding cannot slip past), a byte cap enforced on the stream
  and one deadline for the whole fetch.
- :class:`DiskCache` keeps cached answers private (0700 folder, 0600 files), written atomically
  and read back only within their time-to-live.

Every exception raised here derives from :class:`GuardError` and carries a message that is safe
and useful to show to a user or a model.
"""

from docab_mcpguard.addresses import AddressClass, classify_address, is_internal
from docab_mcpguard.diskcache import DiskCache, Stored
from docab_mcpguard.errors import FetchError, FetchErrorKind, GuardError, HostDenied, PathDenied
from docab_mcpguard.hosts import HostPolicy, normalise_host
from docab_mcpguard.http import Fetched, FetchLimits, GuardedClient, Resolver, SystemResolver
from docab_mcpguard.paths import PathPolicy

__all__ = [
    "AddressClass",
    "DiskCache",
    "FetchError",
    "FetchErrorKind",
    "FetchLimits",
    "Fetched",
    "GuardError",
    "GuardedClient",
    "HostDenied",
    "HostPolicy",
    "PathDenied",
    "PathPolicy",
    "Resolver",
    "Stored",
    "SystemResolver",
    "classify_address",
    "is_internal",
    "normalise_host",
]
