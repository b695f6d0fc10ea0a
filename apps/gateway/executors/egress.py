"""Connections under the egress policy (apps/common/egress.py): the transport every executor's
HTTP goes through.

The decision that counts is made on the address actually connected to: `EgressTransport`
resolves the name itself, checks every address it resolves to, then connects to a checked
address (the URL's host still goes in the Host header and the TLS SNI). A name that
resolves to a public address when checked and to 127.0.0.1 when connected (DNS rebinding)
therefore gets nowhere. `AsyncEgressTransport` does the same for the MCP SDK's async client
(httpx2, whose pool takes the same kind of network backend).

Both transports also stop reading an answer past TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES (read at
each answer, so a changed setting applies; answer_limit.py).

httpx's timeouts bound each step (a connect, a read, a write), not a whole exchange: an
upstream that drips a byte at a time would never trip them. Inside `deadline(seconds)` every
step of `EgressTransport`'s connections, on the calling thread, ends by then: a name's
resolution (on a worker thread, as getaddrinfo takes no timeout), the connect, the TLS
handshake, each read and write, pooled keep-alive connections included.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import httpcore2
import httpx2

from apps.common.compat.httpx_pool import use_async_pool, use_pool
from apps.common.egress import EgressRefused, IPAddress, address_of, egress_policy

from .answer_limit import CappedAsyncStream, CappedStream

_DEADLINE: ContextVar[float | None] = ContextVar("toolhub_egress_deadline", default=None)
# Names are resolved here when a deadline bounds them; a handful at once is plenty, since
# keep-alive connections make new ones rare.
_RESOLVERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="toolhub-resolve")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every connect, read and write of EgressTransport's connections on this thread ends within
    `seconds` from now (httpcore's ConnectTimeout, ReadTimeout, WriteTimeout past it)."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """`timeout`, shortened to what is left of the deadline; raises `expired` once it passed."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every step ends by the deadline of the thread using it."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        return _DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore2.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _PolicedBackend(httpcore2.NetworkBackend):
    """Resolves, checks every address, then connects to a checked one (never the name again)."""

    def __init__(self) -> None:
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        addresses = _allowed_addresses(host, port, _resolve_by_deadline(host, port))
        error: Exception = httpcore2.ConnectError(f"{host} resolved to no address")
        for address in addresses:
            try:
                stream = self._backend.connect_tcp(
                    str(address), port, timeout=_bounded(timeout, httpcore2.ConnectTimeout),
                    local_address=local_address, socket_options=socket_options,
                )
                return _DeadlineStream(stream)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        raise error

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.NetworkStream:
        raise EgressRefused("executors never connect to Unix sockets")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _resolve_by_deadline(host: str, port: int) -> Sequence[IPAddress]:
    """_resolve, given up (ConnectTimeout) at the deadline when one is set and `host` is a name."""
    left = _bounded(None, httpcore2.ConnectTimeout)
    if left is None or address_of(host.strip("[]")) is not None:
        return _resolve(host, port)
    try:
        return _RESOLVERS.submit(_resolve, host, port).result(timeout=left)
    except FutureTimeout:
        raise httpcore2.ConnectTimeout(f"{host} was not resolved before the call's deadline") from None


class _PolicedAsyncBackend(httpcore2.AsyncNetworkBackend):
    """_PolicedBackend for httpcore2's async pool; the name is resolved on a worker thread."""

    def __init__(self) -> None:
        self._backend = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        resolved = await anyio.to_thread.run_sync(_resolve, host, port, httpcore2.ConnectError)
        addresses = _allowed_addresses(host, port, resolved)
        error: Exception = httpcore2.ConnectError(f"{host} resolved to no address")
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        raise error

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise EgressRefused("executors never connect to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _allowed_addresses(host: str, port: int, addresses: Sequence[IPAddress]) -> Sequence[IPAddress]:
    """`addresses` once the policy allows every one of them; raises EgressRefused otherwise."""
    policy = egress_policy()
    for address in addresses:
        if reason := policy.refusal(host, port, address):
            raise EgressRefused(reason)
    return addresses


def _resolve(
    host: str, port: int, error: type[Exception] = httpcore2.ConnectError
) -> Sequence[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise error(f"could not resolve {host}: {exc}") from None
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


class EgressTransport(httpx2.HTTPTransport):
    """httpx's transport with every connection made through the egress policy.

    Never uses a proxy from the environment (it would be the proxy's address that is
    checked). Each request's URL is judged as written too, so a pooled connection made under
    an earlier, looser policy is not reused against the current one.
    """

    def __init__(self) -> None:
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's defaults
        super().__init__(trust_env=False, limits=limits)
        # httpx has no public way to pass a network backend: build its pool with ours.
        pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PolicedBackend(),
        )
        use_pool(self, pool)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if reason := egress_policy().url_refusal(str(request.url)):
            raise EgressRefused(reason)
        response = super().handle_request(request)
        response.stream = CappedStream(response)
        return response


class AsyncEgressTransport(httpx2.AsyncHTTPTransport):
    """EgressTransport for httpx2's async client (the MCP SDK's). `cut_off` counts the answers
    to requests (not the GET stream of server messages, which belongs to no call) that went
    past the byte limit: the SDK reports them as errors of its own, which this tells apart."""

    def __init__(self) -> None:
        self.cut_off = 0
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
        super().__init__(trust_env=False, limits=limits)
        pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PolicedAsyncBackend(),
        )
        use_async_pool(self, pool)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if reason := egress_policy().url_refusal(str(request.url)):
            raise EgressRefused(reason)
        response = await super().handle_async_request(request)
        response.stream = CappedAsyncStream(
            response, self._count_cut_off if request.method != "GET" else lambda: None
        )
        return response

    def _count_cut_off(self) -> None:
        self.cut_off += 1


def destination_refusal(url: str) -> str | None:
    """Why the policy refuses `url`, judged as written and on every address its host resolves
    to now; None when allowed. Asked before an MCP session is opened, for a refusal that names
    its reason (AsyncEgressTransport enforces it on each connection). Raises
    httpcore2.ConnectError when the name does not resolve."""
    policy = egress_policy()
    if reason := policy.url_refusal(url):
        return reason
    parts = httpx2.URL(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    for address in _resolve(parts.host, port):
        if reason := policy.refusal(parts.host, port, address):
            return reason
    return None
