"""Canary: httpx2's transports still send every request through the pool in `_pool`
(apps/common/compat/httpx_pool.py). If this fails after an upgrade, the egress policy may no
longer apply to executors' connections: fix the compat module before anything ships."""

from __future__ import annotations

import anyio
import httpcore2
import httpx2

from apps.common.compat.httpx_pool import use_async_pool, use_pool
from apps.gateway.executors.egress import (
    AsyncEgressTransport,
    EgressTransport,
    _PolicedAsyncBackend,
    _PolicedBackend,
)


class _RecordingPool(httpcore2.ConnectionPool):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bytes] = []

    def handle_request(self, request: httpcore2.Request) -> httpcore2.Response:
        self.seen.append(request.url.host)
        return httpcore2.Response(204)


class _RecordingAsyncPool(httpcore2.AsyncConnectionPool):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bytes] = []

    async def handle_async_request(self, request: httpcore2.Request) -> httpcore2.Response:
        self.seen.append(request.url.host)
        return httpcore2.Response(204)


def test_httpx2_transport_keeps_its_pool_in_pool_and_sends_every_request_through_it():
    transport = httpx2.HTTPTransport()
    assert isinstance(getattr(transport, "_pool", None), httpcore2.ConnectionPool), (
        "httpx2.HTTPTransport no longer keeps an httpcore2.ConnectionPool in `_pool`"
    )
    pool = _RecordingPool()

    use_pool(transport, pool)
    response = httpx2.Client(transport=transport).get("http://canary.invalid/")

    assert response.status_code == 204
    assert pool.seen == [b"canary.invalid"], "httpx2.HTTPTransport.handle_request no longer uses `_pool`"


def test_httpx2_async_transport_keeps_its_pool_in_pool_and_sends_every_request_through_it():
    transport = httpx2.AsyncHTTPTransport()
    assert isinstance(getattr(transport, "_pool", None), httpcore2.AsyncConnectionPool), (
        "httpx2.AsyncHTTPTransport no longer keeps an httpcore2.AsyncConnectionPool in `_pool`"
    )
    pool = _RecordingAsyncPool()
    use_async_pool(transport, pool)

    async def get() -> int:
        async with httpx2.AsyncClient(transport=transport) as client:
            return (await client.get("http://canary.invalid/")).status_code

    assert anyio.run(get) == 204
    assert pool.seen == [b"canary.invalid"], "httpx2.AsyncHTTPTransport no longer uses `_pool`"


def test_the_egress_transports_pools_connect_through_the_policed_backends():
    # httpcore's pool keeps its backend in `_network_backend`: read here only, to check the wiring.
    assert isinstance(EgressTransport()._pool._network_backend, _PolicedBackend)
    assert isinstance(AsyncEgressTransport()._pool._network_backend, _PolicedAsyncBackend)
