"""The most of one upstream answer an executor reads: TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES.

Both egress transports (egress.py) stream every answer's body through `Budget`, which raises
ResponseTooLarge at the first byte past the limit, so no answer is ever held whole in memory
beyond it. The limit counts the bytes an answer decodes to: a gzip or deflate body is
inflated here, a bounded step at a time, and its Content-Encoding removed, since the client
would otherwise inflate a small body into gigabytes after the transport had counted it.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
from django.conf import settings

# Content codings inflated here (zlib's automatic header detection takes gzip and zlib).
_INFLATED = frozenset({"gzip", "x-gzip", "deflate"})


class ResponseTooLarge(httpx2.StreamError):
    """An answer went past the byte limit; the rest of it was not read. A StreamError, which
    the MCP SDK reports to the waiting request as a JSON-RPC error, keeping the session."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the answer is larger than {limit} bytes (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES); "
            "the rest was not read"
        )
        self.limit = limit


class Budget:
    """What one answer may still take, decoding its content coding if it is one inflated
    here. Raises ResponseTooLarge past the limit, `decoding_error` on a corrupt body."""

    def __init__(self, headers: Any, decoding_error: type[Exception]) -> None:
        self.limit = settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES
        self._taken = 0
        self._decoding_error = decoding_error
        self._inflater: Any = None
        if headers.get("content-encoding", "").strip().lower() in _INFLATED:
            self._inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)
            del headers["content-encoding"]

    def take(self, chunk: bytes) -> bytes:
        if self._inflater is not None:
            try:
                # At most one byte past what is left: enough to know the limit is passed.
                chunk = self._inflater.decompress(chunk, self.limit - self._taken + 1)
            except zlib.error:
                raise self._decoding_error("the answer's compressed body is corrupt") from None
        return self._counted(chunk)

    def rest(self) -> bytes:
        """What the decoder still holds once the body has ended."""
        return self._counted(self._inflater.flush()) if self._inflater is not None else b""

    def _counted(self, chunk: bytes) -> bytes:
        self._taken += len(chunk)
        if self._taken > self.limit:
            raise ResponseTooLarge(self.limit)
        return chunk


class CappedStream(httpx2.SyncByteStream):
    """A sync response body under a Budget."""

    def __init__(self, response: httpx2.Response) -> None:
        assert isinstance(response.stream, httpx2.SyncByteStream)
        self._stream = response.stream
        self._budget = Budget(response.headers, httpx2.DecodingError)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            yield self._budget.take(chunk)
        if rest := self._budget.rest():
            yield rest

    def close(self) -> None:
        self._stream.close()


class CappedAsyncStream(httpx2.AsyncByteStream):
    """An async response body under a Budget; `on_cut_off` is told when it passes the limit."""

    def __init__(self, response: httpx2.Response, on_cut_off: Callable[[], None]) -> None:
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        self._stream = response.stream
        self._budget = Budget(response.headers, httpx2.DecodingError)
        self._on_cut_off = on_cut_off

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield self._budget.take(chunk)
            if rest := self._budget.rest():
                yield rest
        except ResponseTooLarge:
            self._on_cut_off()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()
