"""Classify IP addresses so that fetchers can refuse internal targets (SSRF protection)."""

from __future__ import annotations

import ipaddress
from enum import StrEnum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressClass(StrEnum):
    PUBLIC = "public"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    LINK_LOCAL = "link-local"
    METADATA = "cloud metadata"
    SHARED = "carrier-grade NAT"
    MULTICAST = "multicast"
    UNSPECIFIED = "unspecified"
    RESERVED = "reserved"


# Cloud instance-metadata endpoints. Several sit inside link-local or private space; naming them
# separately makes the refusal message say what was actually at stake.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, DigitalOcean
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("169.254.169.253"),  # AWS DNS resolver
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("192.0.0.192"),  # Oracle Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address smuggled inside an IPv6 one (mapped, compatible, 6to4 or NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    packed = int(ip)
    # Deprecated IPv4-compatible form ::a.b.c.d (but not :: or ::1).
    if packed >> 32 == 0 and packed > 1:
        return ipaddress.IPv4Address(packed)
    return None


def classify_address(address: str | IPAddress) -> AddressClass:
    """Return the class of ``address``; IPv6 forms that embed an IPv4 address are judged by it."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return classify_address(embedded)
    if ip in _METADATA:
        return AddressClass.METADATA
    if ip.is_unspecified:
        return AddressClass.UNSPECIFIED
    if ip.is_loopback:
        return AddressClass.LOOPBACK
    if ip.is_link_local:
        return AddressClass.LINK_LOCAL
    if ip.is_multicast:
        return AddressClass.MULTICAST
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return AddressClass.SHARED
    if ip.is_reserved:
        return AddressClass.RESERVED
    if ip.is_private:
        return AddressClass.PRIVATE
    if not ip.is_global:
        return AddressClass.RESERVED
    return AddressClass.PUBLIC


def is_internal(address: str | IPAddress) -> bool:
    """True for every class except PUBLIC."""
    return classify_address(address) is not AddressClass.PUBLIC
