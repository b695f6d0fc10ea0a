"""An upstream that is slow, refuses, resets, drips or answers garbage: the right error kind,
the right ledger state, and never an answer later than the tool's timeout."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke
from tests.listeners import loopback_server_socket
from tests.ops.conftest import free_port

TIMEOUT_S = 1.0
# The executor's deadline plus what ToolHub itself needs to answer (on a busy test machine);
# without the deadline, a hanging or dripping upstream holds the call for 10 s.
LATEST_ANSWER_S = TIMEOUT_S + 1.5


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def _hang(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(10)


def _reset(conn: socket.socket, stop: threading.Event) -> None:
    # SO_LINGER 0: close() sends a TCP RST instead of a FIN.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _close_mid_response(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"refund')


def _json_that_is_not(conn: socket.socket, stop: threading.Event) -> None:
    body = b"<html>Bad gateway</html>"
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body)
    )


def _not_http(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")


def _drip(conn: socket.socket, stop: threading.Event) -> None:
    """A byte every 0.2 s: no single read ever waits past the timeout, the whole answer does."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}":
        if stop.wait(0.2):
            return
        try:
            conn.sendall(bytes([byte]))
        except OSError:
            return


class FakeUpstream:
    """A socket server on loopback that reads each request, then misbehaves as told."""

    def __init__(self, behaviour: Callable[[socket.socket, threading.Event], None]) -> None:
        self.behaviour = behaviour
        self.requests = 0
        self.stop = threading.Event()
        self.sock = loopback_server_socket(accept_timeout_s=0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            _read_request(conn)
            self.requests += 1
            self.behaviour(conn, self.stop)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


BEHAVIOURS = {
    "hang": _hang,
    "drip": _drip,
    "reset": _reset,
    "close_mid_response": _close_mid_response,
    "json_that_is_not": _json_that_is_not,
    "not_http": _not_http,
}
# What the model reads for each, and what the ledger must say of a write.
WRITE_OUTCOMES = {
    "hang": ("timeout", LedgerState.UNKNOWN),
    "drip": ("timeout", LedgerState.UNKNOWN),
    "reset": ("upstream_error", LedgerState.UNKNOWN),
    "close_mid_response": ("upstream_error", LedgerState.UNKNOWN),
    "json_that_is_not": ("upstream_error", LedgerState.UNKNOWN),
    "not_http": ("upstream_error", LedgerState.UNKNOWN),
    "refused": ("upstream_error", LedgerState.FAILED),
}
READ_KINDS = {name: kind for name, (kind, _) in WRITE_OUTCOMES.items()}


@pytest.fixture
def upstream(request) -> Iterator[FakeUpstream | None]:
    if request.param == "refused":
        yield None
        return
    server = FakeUpstream(BEHAVIOURS[request.param])
    yield server
    server.close()


def _url(upstream: FakeUpstream | None) -> str:
    return upstream.url if upstream else f"http://127.0.0.1:{free_port()}"


def _timed_invoke(api, name: str, session: str) -> tuple[dict, float]:
    started = time.monotonic()
    body = invoke(api, name, {"query": "a"}, session=session).json()
    return body, time.monotonic() - started


@pytest.mark.parametrize("upstream", list(WRITE_OUTCOMES), indirect=True)
def test_a_write_to_a_misbehaving_upstream_answers_in_time_and_the_ledger_says_what_is_known(
    api, publish_tool, session_for, upstream, request
):
    behaviour = request.node.callspec.params["upstream"]
    kind, state = WRITE_OUTCOMES[behaviour]
    publish_tool(
        "pay_out",
        side_effect="write",
        executor="http",
        timeout_s=TIMEOUT_S,
        executor_config={"url": _url(upstream), "path": "/payouts"},
    )

    body, elapsed = _timed_invoke(api, "pay_out", session_for("u-1"))

    entry = LedgerEntry.objects.get()
    assert elapsed < LATEST_ANSWER_S
    assert body["status"] == "error" and body["kind"] == kind and body["recoverable"] is False
    assert entry.state == state
    if state == LedgerState.UNKNOWN:  # it may have happened: never invite a second call
        assert "Do not call again" in body["hint"] and body["execution_id"] == str(entry.pk)
    else:  # nothing was sent
        assert "nothing happened" in body["message"]
    assert upstream is None or upstream.requests == 1


@pytest.mark.parametrize("upstream", list(READ_KINDS), indirect=True)
def test_a_read_from_a_misbehaving_upstream_answers_in_time_with_the_right_kind(
    api, publish_tool, session_for, upstream, request
):
    behaviour = request.node.callspec.params["upstream"]
    publish_tool(
        "look_up",
        executor="http",
        timeout_s=TIMEOUT_S,
        executor_config={"url": _url(upstream), "path": "/lookups"},
    )

    body, elapsed = _timed_invoke(api, "look_up", session_for("u-1"))

    assert elapsed < LATEST_ANSWER_S
    assert body["status"] == "error" and body["kind"] == READ_KINDS[behaviour]
    assert not LedgerEntry.objects.exists()


def test_a_name_that_resolves_too_slowly_answers_in_time_and_nothing_was_sent(
    api, publish_tool, session_for, monkeypatch
):
    # given: a provider whose name takes far longer than the tool's timeout to resolve
    def slow_resolver(host, port, *args, **kwargs):
        time.sleep(TIMEOUT_S * 3)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", slow_resolver)
    publish_tool("pay_out", side_effect="write", executor="http", timeout_s=TIMEOUT_S,
                 executor_config={"url": "http://payouts.example", "path": "/payouts"})

    # when
    body, elapsed = _timed_invoke(api, "pay_out", session_for("u-1"))

    # then
    assert elapsed < LATEST_ANSWER_S
    assert (body["status"], body["kind"]) == ("error", "upstream_error")
    assert "nothing happened" in body["message"]
    assert LedgerEntry.objects.get().state == LedgerState.FAILED
