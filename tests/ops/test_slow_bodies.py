"""Slow and huge request bodies against a real gunicorn: they must not take the server.

Raw sockets, because a well-behaved client sends a body at once: these send one byte at a
time, or declare far more than they send, the way an attacker does.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.ops.conftest import SERVER_ADMIN_MAX_BODY_BYTES, SERVER_BODY_READ_TIMEOUT_S, Server

pytestmark = pytest.mark.slow

# More than the test server's threads (two workers of four): before, these took them all.
SLOW_SOCKETS = 16


def _open(server: Server) -> socket.socket:
    address = urlsplit(server.url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def _head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer_within(sock: socket.socket, timeout_s: float) -> bytes:
    """What the server sent until it closed the connection, or until `timeout_s` passed."""
    deadline = time.monotonic() + timeout_s
    answer = b""
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not data:
            break
        answer += data
    return answer


class Trickle:
    """A socket that sent its request head and then sends one body byte every `every_s`,
    until the server answers or closes; what it got back is in `answer`."""

    def __init__(self, sock: socket.socket, every_s: float = 0.5) -> None:
        self.sock = sock
        self.every_s = every_s
        self.answer = b""
        self.answered_after_s: float | None = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(self.every_s)
        while time.monotonic() - self.started < 30:
            try:
                self.sock.sendall(b"x")
            except OSError:
                break  # the server closed the connection
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            self.answered_after_s = time.monotonic() - self.started
            self.answer = data + _answer_within(self.sock, timeout_s=2)
            return
        self.answered_after_s = time.monotonic() - self.started

    def status(self) -> int | None:
        if not self.answer.startswith(b"HTTP/1.1 "):
            return None
        return int(self.answer[9:12])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.thread.join(timeout=5)


@contextlib.contextmanager
def trickling(
    server: Server, path: str, headers: dict[str, str], *, count: int, start: bytes = b""
) -> Iterator[list[Trickle]]:
    trickles = []
    for _ in range(count):
        sock = _open(server)
        sock.sendall(_head(path, headers) + start)
        trickles.append(Trickle(sock))
    try:
        yield trickles
    finally:
        for trickle in trickles:
            trickle.close()


def _healthz_seconds(server: Server) -> float:
    started = time.monotonic()
    response = httpx.get(f"{server.url}/healthz", timeout=10)
    assert response.status_code == 200
    return time.monotonic() - started


def _wait_for_answers(trickles: list[Trickle], timeout_s: float) -> None:
    for trickle in trickles:
        trickle.thread.join(timeout=max(0.0, timeout_s - (time.monotonic() - trickle.started)))


DECLARED_1000 = {"Content-Type": "application/json", "Content-Length": "1000"}
CHUNKED = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}


@pytest.mark.parametrize("path", ["/api/v1/invoke", "/mcp"])
@pytest.mark.parametrize(
    ("headers", "start"),
    [(DECLARED_1000, b""), (CHUNKED, b"ffffffffffffffffff\r\n")],
    ids=["declared-1000-bytes", "chunk-of-2^72-bytes"],
)
def test_unauthenticated_slow_bodies_are_refused_unread_and_the_server_keeps_answering(
    gunicorn_server: Server, path: str, headers: dict[str, str], start: bytes
):
    # Given sixteen sockets without a key, each sending its body one byte at a time
    with trickling(gunicorn_server, path, headers, count=SLOW_SOCKETS, start=start) as trickles:
        # When the server is asked for its health meanwhile
        health_s = [_healthz_seconds(gunicorn_server) for _ in range(3)]
        _wait_for_answers(trickles, timeout_s=5)

    # Then it answers at once, and each slow socket got its 401 without its body being read
    assert max(health_s) < 1.5, health_s
    assert [t.status() for t in trickles] == [401] * SLOW_SOCKETS
    assert all(t.answered_after_s is not None and t.answered_after_s < 3 for t in trickles)


def _authenticated(server: Server, headers: dict[str, str]) -> dict[str, str]:
    return {**headers, "Authorization": f"Bearer {server.agent_key}"}


@pytest.mark.parametrize(
    ("headers", "start"),
    [(DECLARED_1000, b""), (CHUNKED, b"3e8\r\n")],
    ids=["declared-1000-bytes", "chunked"],
)
@pytest.mark.parametrize("path", ["/api/v1/invoke", "/admin/login/"])
def test_a_body_that_does_not_arrive_in_time_is_cut_with_408(
    gunicorn_server: Server, path: str, headers: dict[str, str], start: bytes
):
    # Given a client (with a key, for the agent API) sending its body one byte at a time
    headers = _authenticated(gunicorn_server, headers)
    with trickling(gunicorn_server, path, headers, count=1, start=start) as trickles:
        # When the read timeout passes
        _wait_for_answers(trickles, timeout_s=SERVER_BODY_READ_TIMEOUT_S + 4)
        health_s = _healthz_seconds(gunicorn_server)

    # Then the server answered 408, closed the connection, and still answers others
    (trickle,) = trickles
    assert trickle.status() == 408, trickle.answer[:300]
    assert b"connection: close" in trickle.answer.lower()
    assert b"TOOLHUB_BODY_READ_TIMEOUT_S" in trickle.answer
    assert trickle.answered_after_s is not None
    assert SERVER_BODY_READ_TIMEOUT_S - 0.5 < trickle.answered_after_s < SERVER_BODY_READ_TIMEOUT_S + 2
    assert health_s < 1.5


PART_BYTES = 400 * 1024 * 1024
BOUNDARY = "toolhub-test-boundary"


def _multipart_head() -> bytes:
    return (
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="username"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def test_a_huge_declared_part_to_the_admin_login_is_refused_before_it_is_read(gunicorn_server: Server):
    # Given an unauthenticated login POST declaring a 400 MB part, of which only the start is sent
    sock = _open(gunicorn_server)
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", "Content-Length": str(PART_BYTES)}
    started = time.monotonic()
    sock.sendall(_head("/admin/login/", headers) + _multipart_head() + b"x" * 65536)

    # When the server answers
    answer = _answer_within(sock, timeout_s=3)
    sock.close()

    # Then at once, with 413 and the limit named, without waiting for the rest
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert time.monotonic() - started < 3
    assert str(SERVER_ADMIN_MAX_BODY_BYTES).encode() in answer


def test_a_huge_chunked_part_to_the_admin_login_is_cut_at_the_admin_limit(gunicorn_server: Server):
    # Given an unauthenticated login POST streaming a 400 MB part in chunks
    sock = _open(gunicorn_server)
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", "Transfer-Encoding": "chunked"}
    sock.sendall(_head("/admin/login/", headers))
    chunk = b"x" * (256 * 1024)
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    head = _multipart_head()
    sock.sendall(b"%x\r\n%s\r\n" % (len(head), head))
    sent = len(head)
    sock.settimeout(10)

    # When it keeps sending until the server answers or stops reading
    while sent < PART_BYTES and not select.select([sock], [], [], 0)[0]:
        try:
            sock.sendall(framed)
        except OSError:
            break
        sent += len(chunk)
    answer = _answer_within(sock, timeout_s=3)
    sock.close()

    # Then it answered 413 once it had read past the admin's limit, not after the whole part
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert SERVER_ADMIN_MAX_BODY_BYTES < sent < 4 * SERVER_ADMIN_MAX_BODY_BYTES
