"""Django's PostgreSQL backend with a connection health check that costs no round trip.

`CONN_HEALTH_CHECKS` makes Django check a persistent connection before the first query of
every request, and the python executor's worker thread counts as a request of its own, so a
governed write paid two `SELECT 1` round trips (about 75 us of the app's CPU each under
load, and PostgreSQL's). A connection PostgreSQL ended (a restart, `pg_terminate_backend`,
`idle_session_timeout`) has its socket closed by the server, after a last FATAL message:
idle, the socket turns readable. So an idle connection whose socket has nothing to read is
usable as far as a `SELECT 1` could tell; one with something to read is replaced. What an
idle connection could otherwise receive (a notification: ToolHub listens to none; a
setting's new value after a reload) costs a reconnection, never a wrong answer. A peer that
vanished without closing (a network cut) fools both checks alike: the query fails or times
out, and the request answers 503.

settings/base.py `database_from_env` names this backend for every PostgreSQL URL.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus

# In a transaction or not; a failed transaction would fail a SELECT 1 too, and a lost
# connection reads UNKNOWN.
_HEALTHY = frozenset({TransactionStatus.IDLE, TransactionStatus.INTRANS})


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        if connection.info.transaction_status not in _HEALTHY:
            return False
        poll = select.poll()
        poll.register(connection.fileno(), select.POLLIN)
        return not poll.poll(0)
