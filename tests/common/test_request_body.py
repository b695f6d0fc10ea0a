"""BoundedBody and the read deadlines, without a server: the edges the live tests do not reach."""

from __future__ import annotations

import io
import socket
import threading
import time

import pytest

from apps.common.read_deadlines import ReadDeadlines
from apps.common.request_body import BodyCut, BodyTooLarge, BoundedBody


def _body(data: bytes, *, declared: int | None, limit: int = 10) -> BoundedBody:
    return BoundedBody(
        io.BytesIO(data), declared=declared, limit=limit, setting="TOOLHUB_MAX_BODY_BYTES", sock=None,
        timeout_s=10,
    )


def test_a_chunked_body_of_exactly_the_limit_is_read_whole():
    body = _body(b"x" * 10, declared=None)

    # When Django reads it through its stream, which asks for at most the limit
    data = body.read(10)

    assert data == b"x" * 10 and body.read() == b""
    assert body.complete


def test_a_chunked_body_one_byte_over_the_limit_is_refused_with_the_limit_named():
    body = _body(b"x" * 11, declared=None)

    with pytest.raises(BodyTooLarge) as refused:
        body.read(10)

    assert "10 bytes, TOOLHUB_MAX_BODY_BYTES" in str(refused.value)
    assert not body.complete


def test_a_declared_length_over_the_limit_is_refused_without_reading():
    raw = io.BytesIO(b"x" * 20)
    body = BoundedBody(raw, declared=20, limit=10, setting="TOOLHUB_MAX_BODY_BYTES", sock=None, timeout_s=10)

    with pytest.raises(BodyTooLarge):
        body.read()

    assert raw.tell() == 0


def test_a_body_that_ends_before_its_declared_length_is_cut():
    body = _body(b"x" * 4, declared=8)

    with pytest.raises(BodyCut) as cut:
        body.read()

    assert "after 4 of 8 bytes" in str(cut.value)


def test_readline_stops_at_the_end_of_a_line():
    body = _body(b"ab\ncd", declared=5)

    assert [body.readline(), body.readline(), body.readline()] == [b"ab\n", b"cd", b""]


def test_a_read_past_its_deadline_is_cut_however_slowly_bytes_come():
    # Given a socket whose peer sends a byte every 0.1 s, and a deadline 0.5 s away
    server, client = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.1):
            try:
                client.send(b"x")
            except OSError:
                return

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    received = b""
    started = time.monotonic()
    # When a reader loops over recv() until it has 1000 bytes, as the server's body reader does
    with ReadDeadlines().watching(server, deadline=started + 0.5) as watch:
        while len(received) < 1000 and (data := server.recv(1000)):
            received += data
    elapsed = time.monotonic() - started
    stop.set()
    sender.join()
    server.close()
    client.close()

    # Then the read ended at the deadline with what had come
    assert watch.expired
    assert 0.4 < elapsed < 1.5
    assert 0 < len(received) < 20
