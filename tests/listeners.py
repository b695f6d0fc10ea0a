"""A listener on loopback that records every connection and every byte it receives: the
attacker's endpoint in egress and secrets tests, where "nothing was sent" must be a fact."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def http_response(status: str = "200 OK", body: bytes = b'{"ok": true}', headers: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n{headers}\r\n"
    ).encode() + body


OK_JSON = http_response()


def loopback_server_socket(*, accept_timeout_s: float) -> socket.socket:
    """A listening TCP socket on a free port of 127.0.0.1; accept() gives up after the timeout,
    so the serving thread can notice when it should stop."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(accept_timeout_s)
    return sock


class RecordingListener:
    """Accepts connections on 127.0.0.1, keeps what each sent, answers `response` once."""

    def __init__(self, response: bytes = OK_JSON) -> None:
        self.response = response
        self.connections = 0
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = loopback_server_socket(accept_timeout_s=0.1)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def everything_received(self) -> bytes:
        with self._lock:
            return b"".join(self.received)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        data = b""
        conn.settimeout(2)
        with conn:
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            # Recorded before answering, so a caller that got the answer sees the record.
            with self._lock:
                self.received.append(data)
            try:
                conn.sendall(self.response)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def recording_listener(response: bytes = OK_JSON) -> Iterator[RecordingListener]:
    listener = RecordingListener(response)
    try:
        yield listener
    finally:
        listener.close()


_OPEN_TCP_STATES = frozenset({"01", "08"})  # ESTABLISHED, CLOSE_WAIT (the peer closed, we did not)


def open_connections_to(port: int) -> int:
    """How many TCP sockets on this machine are connected to loopback `port` and not closed
    by their owner (Linux /proc): the client ends of connections to a test server."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    fields = row.split()
                    remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                    count += remote_port == port and fields[3] in _OPEN_TCP_STATES
        except FileNotFoundError:
            continue
    return count
