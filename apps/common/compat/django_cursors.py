"""A cursor that binds its parameters on the server, on a connection whose own cursors bind
them on the client (Django's default on PostgreSQL).

The internals: `BaseDatabaseWrapper._prepare_cursor(cursor)`, which wraps a driver's cursor
as `connection.cursor()` does (Django's `CursorWrapper`, or its debug wrapper when queries
are logged: execute wrappers, `assertNumQueries`, error translation), and
`django.db.backends.postgresql.base.ServerBindingCursor`, the psycopg 3 cursor Django uses
when the `server_side_binding` option is on. `new_server_binding_cursor` does what
`BaseDatabaseWrapper._cursor` does (health check, connect, wrap) with that cursor.

Checked against Django 5.2.19 (the same code since Django 4.2).

If they change: the ledger's writes (apps/common/db.py) fail with ImportError or
AttributeError on every governed write, or run unseen by Django's query log and execute
wrappers. tests/common/compat/test_django_cursors.py fails first.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.base import ServerBindingCursor


def new_server_binding_cursor(database: BaseDatabaseWrapper) -> Any:
    """A new cursor of `database` (PostgreSQL with psycopg 3) whose parameters travel beside
    the statement, so that psycopg can prepare it; wrapped as `database.cursor()` is."""
    database.close_if_health_check_failed()
    database.ensure_connection()
    wrapper: Any = database  # private, so not in the stubs
    cursor_class: Any = ServerBindingCursor
    with database.wrap_database_errors:
        return wrapper._prepare_cursor(cursor_class(database.connection))
