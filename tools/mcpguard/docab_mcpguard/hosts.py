"""Which URL hosts may be fetched, and which of them may reach internal addresses."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docab_mcpguard.addresses import AddressClass, classify_address
from docab_mcpguard.errors import HostDenied

if TYPE_CHECKING:
    import httpx2

ALLOWED_SCHEMES = frozenset({"http", "https"})


def normalise_host(host: str) -> str:
    """Lower-case, strip a trailing dot and IPv6 brackets, and IDNA-encode a host name."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostPolicy:
    """A host allow-list plus an exact-match list of hosts permitted to resolve internally.

    ``allow_any``: any public host may be fetched (``--allow-domain all``).
    ``domains``: otherwise, hosts allowed by suffix: ``example.com`` allows ``docs.example.com``
    but not ``badexample.com``. Empty with ``allow_any`` false means no URL is allowed.
    ``internal_hosts``: hosts (names or IP literals) that may resolve to loopback, private,
    link-local or metadata addresses. Nothing else may, whatever the allow-list says.
    ``remedy``: how a refused host is allowed on this server, with ``{host}`` where the host goes
    (``"--allow-host {host} (or MARKFETCH_ALLOW_HOSTS)"``); every refusal ends with it, so the
    person reading it knows which setting lifts it (:mod:`docab_mcpguard.access` builds it).
    """

    allow_any: bool = False
    domains: tuple[str, ...] = ()
    internal_hosts: frozenset[str] = field(default_factory=frozenset)
    remedy: str = ""

    @classmethod
    def build(
        cls,
        *,
        allow_any: bool = False,
        domains: Iterable[str] = (),
        internal_hosts: Iterable[str] = (),
        remedy: str = "",
    ) -> HostPolicy:
        return cls(
            allow_any=allow_any,
            domains=tuple(normalise_host(d) for d in domains if d.strip()),
            internal_hosts=frozenset(normalise_host(h) for h in internal_hosts if h.strip()),
            remedy=remedy,
        )

    def lift(self, host: str) -> str:
        """How to allow ``host`` here: the remedy with the host filled in ("" when none is set)."""
        return self.remedy.replace("{host}", host) if self.remedy else ""

    @property
    def allows_urls(self) -> bool:
        return self.allow_any or bool(self.domains)

    def describe(self) -> str:
        if self.allow_any:
            return "any public host"
        if not self.domains:
            return "no hosts (URLs are disabled)"
        return ", ".join(self.domains)

    def permits_host(self, host: str) -> bool:
        host = normalise_host(host)
        if self.allow_any or host in self.internal_hosts:
            return True
        if is_ip_literal(host):
            return host in self.domains
        return any(host == d or host.endswith("." + d) for d in self.domains)

    def check_url(self, url: str | httpx2.URL) -> httpx2.URL:
        """Parse ``url`` and check its scheme and host; return the parsed URL or raise HostDenied."""
        import httpx2  # here: a program that only reads its settings (--help) stays light

        try:
            parsed = httpx2.URL(str(url))
        except (httpx2.InvalidURL, ValueError, TypeError) as exc:
            raise HostDenied(f"{str(url)[:200]!r} is not a valid URL") from exc
        if parsed.scheme not in ALLOWED_SCHEMES:
            raise HostDenied(f"only http and https URLs are allowed, not {parsed.scheme or 'a bare path'!r}")
        if not parsed.host:
            raise HostDenied(f"{str(url)[:200]!r} has no host")
        if parsed.userinfo:
            raise HostDenied("URLs with embedded credentials are not allowed")
        # The URL parser takes any number; the socket layer raises OverflowError on one past 65535.
        if parsed.port is not None and not 0 < parsed.port <= 65535:
            raise HostDenied(f"{str(url)[:200]!r} has port {parsed.port}, outside 1-65535")
        if not self.permits_host(parsed.host):
            lift = self.lift(parsed.host)
            raise HostDenied(
                f"host {parsed.host!r} is not allowed (allowed: {self.describe()})"
                + (f"; to allow it, run with {lift}" if lift else "")
            )
        return parsed

    def check_address(self, host: str, address: str) -> None:
        """Refuse a connection from ``host`` to an internal ``address`` unless the host is listed."""
        kind = classify_address(address)
        if kind is AddressClass.PUBLIC:
            return
        if normalise_host(host) in self.internal_hosts:
            return
        shown = host if normalise_host(host) == normalise_host(address) else f"{host} ({address})"
        lift = self.lift(normalise_host(host))
        raise HostDenied(
            f"refusing to connect to {shown}: it is a {kind.value} address; "
            + (
                f"to permit local access, run with {lift}"
                if lift
                else "allow that exact host explicitly to permit local access"
            )
        )
