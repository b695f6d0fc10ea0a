"""gunicorn's threaded worker, taking turns with the other workers to accept connections.

gunicorn's workers share one listening socket, and a worker accepts connections for as long
as any is waiting: when a client opens several keep-alive connections at once (an agent's
connection pool, a proxy's upstream connections, a load generator), the first worker awake
takes most of them and keeps them. Measured with 8 connections over 4 workers on two cores,
the busiest worker held 4 to 8 of them in 100 of 110 samples, so one process (one GIL) served
most requests while the other cores idled: fewer requests a second, and a p99 of 3 to 6 times
the p50 for the requests queued in that worker (docs/performance.md).

Here a worker that has just accepted a connection steps back from the socket for
ACCEPT_PAUSE_S, so that the other workers, woken by the same burst, take the next ones.
Otherwise connections are accepted as gunicorn's worker accepts them; one waits at most that long more,
and only when every worker has just accepted one.
"""

from __future__ import annotations

import time
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

ACCEPT_PAUSE_S = 0.005


class TurnTakingThreadWorker(ThreadWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._accept_again_at = 0.0

    def accept(self, listener: Any) -> None:
        connections = self.nr_conns
        super().accept(listener)
        if self.nr_conns > connections:
            self._accept_again_at = time.monotonic() + ACCEPT_PAUSE_S
            self.set_accept_enabled(False)

    def set_accept_enabled(self, enabled: bool) -> None:
        # The run loop turns accepting back on whenever the worker has room: not before its turn.
        if enabled and time.monotonic() < self._accept_again_at:
            return
        super().set_accept_enabled(enabled)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        paused_for = self._accept_again_at - time.monotonic()
        if not self._accepting and paused_for > 0:
            timeout = min(timeout, paused_for)
        super().wait_for_and_dispatch_events(timeout)
