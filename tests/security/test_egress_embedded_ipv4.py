"""The egress policy judges an IPv6 address by the IPv4 address it carries (NAT64, 6to4,
Teredo, the IPv4-compatible, -mapped and -translated forms) and refuses the local-use NAT64
and site-local ranges, at connect time: a tool whose upstream's name resolves to such an
address is refused before any connection is attempted."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke
from tests.gateway.executors.http.test_http_upstreams import an_upstream, tenant_tool

pytestmark = pytest.mark.django_db

HOST = "orders.nat64.test"


@pytest.fixture
def connections(monkeypatch) -> list[Any]:
    """Every connection the process attempts (real ones still happen)."""
    attempts: list[Any] = []
    real = socket.create_connection

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        attempts.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return attempts


def resolving(monkeypatch, address: str) -> None:
    """HOST resolves to `address` only, as a DNS64 resolver or a hostile zone answers."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HOST:
            return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port, 0, 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("64:ff9b::a9fe:a9fe", "cloud metadata address (169.254.169.254 in NAT64 form)"),
        ("64:ff9b:1::a9fe:a9fe", "NAT64 local-use address"),
        ("::127.0.0.1", "loopback address (127.0.0.1 in IPv4-compatible form)"),
        ("::10.0.0.1", "private address (10.0.0.1 in IPv4-compatible form)"),
        ("2002:a9fe:a9fe::1", "cloud metadata address (169.254.169.254 in 6to4 form)"),
        ("::ffff:0:a9fe:a9fe", "cloud metadata address (169.254.169.254 in IPv4-translated form)"),
        ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata address (169.254.169.254 in Teredo form)"),
        ("fec0::1", "site-local address"),
    ],
)
def test_an_upstream_resolving_to_an_embedded_private_address_is_refused_before_connecting(
    api, agent, monkeypatch, connections, address, says
):
    # given: a tenant's upstream whose public-looking name resolves to the IPv6 form
    resolving(monkeypatch, address)
    an_upstream(agent.tenant, f"http://{HOST}:8080")
    tenant_tool(agent, upstream="orders-api", side_effect="write")

    # when
    body = invoke(api, "order_lookup", {"order_id": "o-1"}).json()

    # then: refused by the egress policy, naming the IPv4 address reached; no connection tried
    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "unavailable", False)
    assert f"{HOST}:8080 ({ipaddress.ip_address(address)}) is a {says}" in body["message"]
    assert "Nothing was sent" in body["message"] and "egress policy" in body["hint"]
    assert connections == []
    assert LedgerEntry.objects.get().state == LedgerState.FAILED
