"""The health check of a persistent connection reads its socket instead of a round trip, and
still replaces a connection PostgreSQL has ended before a request uses it."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _fresh_connection_afterwards():
    yield
    connection.close()  # the test database is emptied next, through a connection that works


def _server_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _terminate(pid: int) -> None:
    """End a server process as a restart or an administrator would, from another connection."""
    settings = connection.get_connection_params()
    settings.pop("cursor_factory", None)
    settings.pop("context", None)
    with psycopg.connect(**settings, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    # The server closes the socket as it exits.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and connection.is_usable():
        time.sleep(0.01)


def test_an_idle_connection_passes_without_a_round_trip(monkeypatch):
    _server_pid()

    def no_round_trip(*args, **kwargs):
        raise AssertionError("the health check sent a statement")

    monkeypatch.setattr(connection.connection, "cursor", no_round_trip)
    monkeypatch.setattr(connection.connection, "execute", no_round_trip)

    assert connection.is_usable()


def test_a_connection_the_server_ended_fails_the_check():
    _terminate(_server_pid())

    assert not connection.is_usable()


def test_the_next_request_gets_a_new_connection_instead_of_an_error():
    ended = _server_pid()
    connection.close_at = time.monotonic() + 600  # persistent, as CONN_MAX_AGE makes it
    _terminate(ended)

    # What every request starts with (the WSGI handler's request_started signal).
    connection.close_if_unusable_or_obsolete()

    assert _server_pid() != ended
