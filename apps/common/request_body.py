"""A request body read within a size limit and a deadline (the `wsgi.input` of apps/common/wsgi.py)."""

from __future__ import annotations

import socket
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import UnreadablePostError
from gunicorn.http.errors import ParseException

from .errors import InvalidArgsError
from .read_deadlines import read_deadlines

# After the answer is ready, how long an unread body may take to finish arriving so the
# connection can serve the client's next request; past that it is closed instead.
DRAIN_S = 0.25


class BodyTooLarge(RequestDataTooBig):
    http_status = 413

    def __init__(self, *, limit: int, setting: str) -> None:
        super().__init__(f"The request body is larger than this server accepts ({limit} bytes, {setting}).")
        self.limit = limit
        self.setting = setting
        if setting == "TOOLHUB_ADMIN_MAX_BODY_BYTES":
            self.hint = "Upload a smaller file, or have an operator raise TOOLHUB_ADMIN_MAX_BODY_BYTES."
        else:
            self.hint = "Send a smaller request: fewer calls per batch or shorter arguments."


class BodyReadTimeout(Exception):
    http_status = 408
    hint = (
        "Send the whole body right after the headers; nothing was run, so sending the request "
        "again is safe."
    )

    def __init__(self, *, timeout_s: float) -> None:
        super().__init__(
            f"The request body did not arrive within {timeout_s:g} s (TOOLHUB_BODY_READ_TIMEOUT_S)."
        )
        self.timeout_s = timeout_s


class BodyCut(UnreadablePostError):
    """The body ended before its declared length, or its chunked framing is broken."""

    http_status = 400
    hint = (
        "Send the body whole: as many bytes as Content-Length says, or chunks that end with the "
        "last, empty one."
    )


def body_refusal_error(exc: RequestDataTooBig | BodyReadTimeout | BodyCut) -> InvalidArgsError:
    """What a client is told when its body is refused: nothing ran."""
    if not isinstance(exc, (BodyTooLarge, BodyReadTimeout, BodyCut)):
        # Django's own RequestDataTooBig: a declared length over TOOLHUB_MAX_BODY_BYTES.
        exc = BodyTooLarge(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE, setting="TOOLHUB_MAX_BODY_BYTES")
    return InvalidArgsError(str(exc), hint=exc.hint, http_status=exc.http_status)


class BoundedBody:
    """The body of one request, read from the server's `wsgi.input` on demand.

    - At most `limit` bytes: a declared length over it is refused unread, a chunked body is
      counted while it is read and refused one byte past it (`BodyTooLarge`).
    - Within `timeout_s` of the request's headers, however slowly it comes (`BodyReadTimeout`):
      the socket's reading side is shut at the deadline (apps/common/read_deadlines.py).
    - `settle()` once the answer is ready: reads what is left of it, briefly, so the
      connection can be kept; whether it may be is `complete`.

    Without the server's socket (`sock` None) there is no deadline.
    """

    def __init__(
        self, raw: Any, *, declared: int | None, limit: int, setting: str,
        sock: socket.socket | None, timeout_s: float,
    ) -> None:
        self._raw = raw
        self.declared = declared
        self.limit = limit
        self._setting = setting
        self._sock = sock
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s
        self.received = 0
        self.complete = declared == 0
        self.failure: Exception | None = None

    @property
    def declared_too_large(self) -> bool:
        return self.declared is not None and self.declared > self.limit

    def read(self, size: int | None = -1) -> bytes:
        return self._read(size, deadline=self._deadline)

    def readline(self, size: int | None = -1) -> bytes:
        """Byte by byte: nothing here reads bodies by line, but Django's stream offers it."""
        line = bytearray()
        while size is None or size < 0 or len(line) < size:
            byte = self.read(1)
            line += byte
            if byte in (b"", b"\n"):
                break
        return bytes(line)

    def read_all(self) -> bytes:
        """The whole body; raises as `read` does."""
        pieces = []
        while piece := self.read(64 * 1024):
            pieces.append(piece)
        return b"".join(pieces)

    def settle(self) -> None:
        """Read and drop what is left, for at most DRAIN_S and never past the limit. What stays
        unread then is given up: the socket's reading side is shut, so closing the
        connection does not wait for a client still sending."""
        if not self.complete and self.failure is None and not self.declared_too_large:
            deadline = min(self._deadline, time.monotonic() + DRAIN_S)
            try:
                while self._read(64 * 1024, deadline=deadline):
                    pass
            except (BodyTooLarge, BodyReadTimeout, BodyCut):
                pass
        if not self.complete and self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass  # the client is gone

    def _read(self, size: int | None, *, deadline: float) -> bytes:
        if self.failure is not None:
            raise self.failure
        if self.complete:
            return b""
        if self.declared_too_large:
            raise self._fail(BodyTooLarge(limit=self.limit, setting=self._setting))
        if size == 0:
            return b""
        end = self.declared if self.declared is not None else self.limit
        wanted = end - self.received if size is None or size < 0 else min(size, end - self.received)
        data, expired = self._raw_read(wanted, deadline=deadline)
        self.received += len(data)
        if self.declared is None and self.received == self.limit:
            # A chunked body that fills the limit: one more byte says it is too large.
            extra, expired = self._raw_read(1, deadline=deadline)
            if extra:
                raise self._fail(BodyTooLarge(limit=self.limit, setting=self._setting))
            wanted = len(data) + 1
        if len(data) < wanted:
            if expired:
                raise self._fail(BodyReadTimeout(timeout_s=self._timeout_s))
            if self.declared is not None:
                ended = f"The request body ended after {self.received} of {self.declared} bytes."
                raise self._fail(BodyCut(ended))
            self.complete = True  # the last chunk
        elif self.received == self.declared:
            self.complete = True
        return data

    def _raw_read(self, size: int, *, deadline: float) -> tuple[bytes, bool]:
        if self._sock is None:
            return self._raw.read(size), False
        with read_deadlines.watching(self._sock, deadline=deadline) as watch:
            try:
                return self._raw.read(size), watch.expired
            except (OSError, ParseException) as exc:
                # The server's reader: the client went away, the deadline cut the socket
                # mid-chunk, or the chunked framing is broken.
                if watch.expired:
                    return b"", True
                unreadable = f"The request body could not be read: {type(exc).__name__}."
                raise self._fail(BodyCut(unreadable)) from None

    def _fail(self, error: Exception) -> Exception:
        self.failure = error
        return error
