"""The egress policy: which hosts and ports an executor may connect to.

A tool's URL is written by a curator, so without a policy any curator can point ToolHub at
its own loopback services, the private network or the cloud's metadata endpoint. Loopback,
private, link-local, unique-local and cloud-metadata addresses are refused unless
`TOOLHUB_EGRESS_ALLOW` names the host (comma-separated `host[:port]` patterns:
`api.example.com`, `*.corp.example:8443`, `127.0.0.1:*`; no port means 80 and 443). Public
addresses are allowed unless `TOOLHUB_EGRESS_PUBLIC` is false, which makes the list a strict
allowlist.

The decision that counts is made on the address actually connected to: `EgressTransport`
resolves the name itself, checks every address it resolves to, then connects to a checked
address (the URL's host still goes in the Host header and the TLS SNI). A name that
resolves to a public address when checked and to 127.0.0.1 when connected (DNS rebinding)
therefore gets nowhere. `url_refusal` judges a URL as written, without DNS: what lint can
know before publishing.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
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
            return _address(host) is None and host.endswith(self.host[1:])
        pattern_address, host_address = _address(self.host), _address(host)
        if pattern_address is not None or host_address is not None:
            return pattern_address == host_address
        return self.host == host


def _address(text: str) -> IPAddress | None:
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


def address_category(address: IPAddress) -> str | None:
    """Why an address is not public (e.g. "loopback"), or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
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
            address = _address(host)
        names = [host] if address is None or str(address) == host else [host, str(address)]
        category = address_category(address) if address is not None else _name_category(host)
        if self._allowed_by(names, port, category):
            return None
        where = f"{host}:{port}" + (f" ({address})" if address is not None and str(address) != host else "")
        if category is not None:
            return (
                f"{where} is a {category} address, refused unless TOOLHUB_EGRESS_ALLOW names the host"
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
    """The policy of the current settings (parsed once per distinct value)."""
    allow = settings.TOOLHUB_EGRESS_ALLOW
    patterns = tuple(allow.split(",") if isinstance(allow, str) else allow)
    return _policy(patterns, bool(settings.TOOLHUB_EGRESS_PUBLIC))


class _PolicedBackend(httpcore.NetworkBackend):
    """Resolves, checks every address, then connects to a checked one (never the name again)."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = _resolve(host, port)
        policy = egress_policy()
        for address in addresses:
            if reason := policy.refusal(host, port, address):
                raise EgressRefused(reason)
        error: Exception = httpcore.ConnectError(f"{host} resolved to no address")
        for address in addresses:
            try:
                return self._backend.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise EgressRefused("executors never connect to Unix sockets")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _resolve(host: str, port: int) -> Sequence[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpcore.ConnectError(f"could not resolve {host}: {exc}") from None
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


class EgressTransport(httpx.HTTPTransport):
    """httpx's transport with every connection made through the egress policy.

    Never uses a proxy from the environment (it would be the proxy's address that is
    checked). Each request's URL is judged as written too, so a pooled connection made under
    an earlier, looser policy is not reused against the current one.
    """

    def __init__(self) -> None:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's defaults
        super().__init__(trust_env=False, limits=limits)
        # httpx has no public way to pass a network backend: build its pool with ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PolicedBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if reason := egress_policy().url_refusal(str(request.url)):
            raise EgressRefused(reason)
        return super().handle_request(request)
