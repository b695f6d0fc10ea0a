"""A deadline for reading a request body from its socket, however slowly the client sends it.

A socket timeout bounds one `recv()`, and the server's body reader loops over `recv()` until
it has the bytes asked for: a client sending one byte a second never trips it. Here one
thread per process shuts the reading side of a socket whose read is past its deadline; the
blocked `recv()` then returns at once with what it has, and the reader sees the body end.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Watch:
    """One read under a deadline: `expired` once the deadline cut it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.active = True
        self.expired = False

    def expire(self) -> None:
        self.expired = True
        try:
            self.sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass  # already closed by the client: nothing left to cut


class ReadDeadlines:
    """The reads being watched, by deadline, and the thread that cuts those past theirs.

    Watching costs a lock and a heap push: it is on the path of every request with a body.
    Finished reads stay in the heap, inactive, until their deadline comes round."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._pending: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, sock: socket.socket, *, deadline: float) -> Iterator[Watch]:
        watch = Watch(sock)
        with self._condition:
            self._start_once()
            heapq.heappush(self._pending, (deadline, next(self._order), watch))
            if self._pending[0][2] is watch:
                self._condition.notify()
        try:
            yield watch
        finally:
            with self._condition:
                watch.active = False

    def start(self) -> None:
        """Start the thread now (a serving process, before its first request)."""
        with self._condition:
            self._start_once()

    def _start_once(self) -> None:
        # Started in the process that serves (a gunicorn worker), not in one it was forked from.
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="toolhub-read-deadlines", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        with self._condition:
            while True:
                now = time.monotonic()
                while self._pending and self._pending[0][0] <= now:
                    _, _, watch = heapq.heappop(self._pending)
                    if watch.active:
                        watch.expire()
                self._condition.wait(self._pending[0][0] - now if self._pending else None)


read_deadlines = ReadDeadlines()
