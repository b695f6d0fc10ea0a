"""Canary: a server-binding cursor is still wrapped as `connection.cursor()` wraps its own
(apps/common/compat/django_cursors.py)."""

from __future__ import annotations

import inspect

import pytest
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test.utils import CaptureQueriesContext

from apps.common.compat.django_cursors import new_server_binding_cursor

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="a cursor of psycopg 3")


def test_the_private_wrapper_keeps_its_signature():
    assert list(inspect.signature(BaseDatabaseWrapper._prepare_cursor).parameters) == ["self", "cursor"]


@pytest.mark.django_db
def test_the_cursor_binds_on_the_server_and_is_seen_by_the_query_log():
    with CaptureQueriesContext(connection) as queries, new_server_binding_cursor(
        connections[DEFAULT_DB_ALIAS]
    ) as cursor:
        cursor.execute("SELECT %s::int + 1", [41])
        answer = cursor.fetchone()

    assert answer == (42,)
    # Logged as PostgreSQL received it: the parameter travelled beside the statement.
    assert [query["sql"] for query in queries.captured_queries] == ["SELECT $1::int + 1"]


@pytest.mark.django_db
def test_its_errors_are_djangos():
    with new_server_binding_cursor(connections[DEFAULT_DB_ALIAS]) as cursor, pytest.raises(IntegrityError):
        cursor.execute("INSERT INTO auth_user (id) VALUES (NULL)")
