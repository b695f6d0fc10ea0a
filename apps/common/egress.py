"""The egress policy: which hosts and ports an executor may connect to.

A tool's URL is written by a curator, so without a policy any curator can point ToolHub at
its own loopback services, the private network or the cloud's metadata endpoint. Loopback,
private, link-local, unique-local and cloud-metadata addresses are refused unless
`TOOLHUB_EGRESS_ALLOW` names the host (comma-separated `host[:port]` patterns:
`api.example.com`, `*.corp.example:8443`, `127.0.0.1:*`; no port means 80 and 443). Public
addresses are allowed unless `TOOLHUB_EGRESS_PUBLIC` is false, which makes the list a strict
allowlist.

Pure: reads settings only. Lint judges a URL as written with `url_refusal` (no DNS), before
publishing; the gateway's transport (apps/gateway/executors/egress.py) applies `refusal` to
every address a name resolves to, at connect time.

An IPv6 address that carries an IPv4 one reaches that IPv4 address (through a NAT64 gateway,
a 6to4 or Teredo relay, or a stack that still honours the deprecated forms), so it is judged
by it: `64:ff9b::a9fe:a9fe` is the metadata service. The local-use NAT64 prefix (where the
IPv4 address sits is the network's choice) and the deprecated site-local range are refused
whatever they hold.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = frozenset({80, 443})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
# Names known to reach this machine or the metadata service, whatever DNS says.
_LOOPBACK_NAMES = ("localhost",)
_METADATA_NAMES = ("metadata.google.internal", "metadata")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")  # deprecated (RFC 3879), still routed in some networks
_NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215
# IPv6 ranges whose last 32 bits are an IPv4 address, by the name of the form.
_IPV4_IN_LAST_32_BITS = (
    ("NAT64", ipaddress.ip_network("64:ff9b::/96")),  # RFC 6052's well-known prefix
    ("IPv4-translated", ipaddress.ip_network("::ffff:0:0:0/96")),  # RFC 2765
    ("IPv4-compatible", ipaddress.ip_network("::/96")),  # deprecated by RFC 4291
)


class EgressRefused(Exception):
    """The policy refuses this destination; nothing was sent to it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class HostPattern:
    """One entry of TOOLHUB_EGRESS_ALLOW: a host (exact, `*.suffix`, or an IP) and its ports."""

    host: str
    ports: frozenset[int] | None  # None: any port

    @property
    def is_wildcard(self) -> bool:
        return self.host.startswith("*.")

    def matches(self, host: str, port: int) -> bool:
        if self.ports is not None and port not in self.ports:
            return False
        if self.is_wildcard:
            return address_of(host) is None and host.endswith(self.host[1:])
        pattern_address, host_address = address_of(self.host), address_of(host)
        if pattern_address is not None or host_address is not None:
            return pattern_address == host_address
        return self.host == host


# Once per distinct text: every outbound request judges its host against each pattern, and
# a name that is no address costs ipaddress two exceptions.
@lru_cache(maxsize=1024)
def address_of(text: str) -> IPAddress | None:
    """The IP address `text` spells, or None for a name."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _canonical_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def parse_pattern(text: str) -> HostPattern:
    """`host`, `host:port`, `host:*`, `[v6]:port` or a bare IPv6 address, as a HostPattern."""
    text = text.strip()
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif text.count(":") == 1:
        host, port = text.split(":")
    host = _canonical_host(host)
    if not host or (host.startswith("*") and not host.startswith("*.")) or "*" in host[1:]:
        raise ImproperlyConfigured(
            f"TOOLHUB_EGRESS_ALLOW: {text!r} is not a host pattern; write host[:port], e.g. "
            "api.example.com, *.corp.example:8443 or 127.0.0.1:*."
        )
    if port == "*":
        return HostPattern(host, None)
    if not port:
        return HostPattern(host, DEFAULT_PORTS)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ImproperlyConfigured(f"TOOLHUB_EGRESS_ALLOW: {text!r} has no valid port (1-65535 or *).")
    return HostPattern(host, frozenset({int(port)}))


@dataclass(frozen=True)
class EmbeddedIPv4:
    """The IPv4 address an IPv6 address reaches, and the name of the form that carries it."""

    address: ipaddress.IPv4Address
    form: str

    def __str__(self) -> str:
        return f"{self.address} in {self.form} form"


def embedded_ipv4(address: IPAddress) -> EmbeddedIPv4 | None:
    """The IPv4 address inside an IPv6 address of a form that carries one, or None."""
    if not isinstance(address, ipaddress.IPv6Address) or address.is_loopback or address.is_unspecified:
        return None
    if address.ipv4_mapped is not None:
        return EmbeddedIPv4(address.ipv4_mapped, "IPv4-mapped")
    if address.sixtofour is not None:
        return EmbeddedIPv4(address.sixtofour, "6to4")
    if address.teredo is not None:  # (server, client): packets go to the client
        return EmbeddedIPv4(address.teredo[1], "Teredo")
    for form, network in _IPV4_IN_LAST_32_BITS:
        if address in network:
            return EmbeddedIPv4(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), form)
    return None


def address_category(address: IPAddress) -> str | None:
    """Why an address is not public (e.g. "loopback"), or None for a public address. An IPv6
    address carrying a non-public IPv4 address has that address's category."""
    if (embedded := embedded_ipv4(address)) is not None and (
        category := address_category(embedded.address)
    ) is not None:
        return category
    if embedded is not None and embedded.form != "Teredo":
        return None  # a public IPv4 address, reached its way (Teredo's own range is not public)
    if address in _NAT64_LOCAL_USE:
        return "NAT64 local-use"
    if address in _SITE_LOCAL:
        return "site-local"
    if address in METADATA_ADDRESSES:
        return "cloud metadata"
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified (it reaches this machine)"
    if address.is_link_local:
        return "link-local"
    if isinstance(address, ipaddress.IPv6Address) and address in _UNIQUE_LOCAL:
        return "unique-local"
    if address.is_private:
        return "private"
    if address.is_multicast:
        return "multicast"
    if not address.is_global:
        return "reserved"
    return None


def _name_category(host: str) -> str | None:
    """The category of a host name that means a non-public destination without resolving it."""
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return "loopback"
    if host in _METADATA_NAMES:
        return "cloud metadata"
    return None


@dataclass(frozen=True)
class EgressPolicy:
    allow: tuple[HostPattern, ...]
    public: bool = True

    def _allowed_by(self, names: Iterable[str], port: int, category: str | None) -> bool:
        # The metadata service holds the machine's cloud credentials: only a pattern naming
        # it exactly, never a wildcard, lets a tool reach it.
        return any(
            pattern.matches(name, port) and not (category == "cloud metadata" and pattern.is_wildcard)
            for pattern in self.allow
            for name in names
        )

    def refusal(self, host: str, port: int, address: IPAddress | None = None) -> str | None:
        """Why connecting to `host`:`port` (at `address` once resolved) is refused, or None.

        Without `address`, judges the host as written: an IP literal by its address, a name
        by what it is known to mean (localhost, the metadata names); other names are judged
        once resolved.
        """
        host = _canonical_host(host)
        if address is None:
            address = address_of(host)
        names = [host] if address is None or str(address) == host else [host, str(address)]
        category = address_category(address) if address is not None else _name_category(host)
        if self._allowed_by(names, port, category):
            return None
        where = f"{host}:{port}" + (f" ({address})" if address is not None and str(address) != host else "")
        if category is not None:
            embedded = embedded_ipv4(address) if address is not None else None
            inside = f" ({embedded})" if embedded is not None and address_category(embedded.address) else ""
            return (
                f"{where} is a {category} address{inside}, refused unless TOOLHUB_EGRESS_ALLOW names "
                "the host"
            )
        if not self.public:
            return f"{where} is not in TOOLHUB_EGRESS_ALLOW and TOOLHUB_EGRESS_PUBLIC is false"
        return None

    def url_refusal(self, url: str) -> str | None:
        """Why a request to `url` is refused, judged without DNS (see `refusal`)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return f"{url!r} is not a valid URL ({exc})"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return f"{url!r} is not an http(s) URL with a host"
        return self.refusal(parts.hostname, port or (443 if parts.scheme == "https" else 80))


@lru_cache(maxsize=8)
def _policy(allow: tuple[str, ...], public: bool) -> EgressPolicy:
    return EgressPolicy(allow=tuple(parse_pattern(p) for p in allow if p.strip()), public=public)


def egress_policy() -> EgressPolicy:
    """The policy of the current settings (parsed once per distinct value). The MCP bridge
    (TOOLHUB_MCP_BRIDGE_URL) is always reachable: it is ToolHub's own service for stdio
    servers, and it answers only requests carrying the token ToolHub derives from SECRET_KEY,
    so a curator who points an upstream at it reaches nothing."""
    allow = settings.TOOLHUB_EGRESS_ALLOW
    patterns = tuple(allow.split(",") if isinstance(allow, str) else allow)
    bridge = _bridge_pattern(settings.TOOLHUB_MCP_BRIDGE_URL)
    return _policy((*patterns, bridge), bool(settings.TOOLHUB_EGRESS_PUBLIC))


@lru_cache(maxsize=4)
def _bridge_pattern(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    return f"[{host}]:{parts.port or 80}" if ":" in host else f"{host}:{parts.port or 80}"
