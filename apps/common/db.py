"""Writes that must land together, in as few round trips as the database allows.

On PostgreSQL a data-modifying CTE (`WITH a AS (INSERT …) INSERT …`) is one statement, so
its parts commit together or not at all, in one round trip instead of BEGIN, one per row,
COMMIT. Other databases (SQLite under `make run`) get the same guarantee from a
transaction. Outside a transaction a single statement is atomic by itself; inside the
caller's, it runs in a savepoint so that its failure (a unique key taken) leaves the
caller's transaction usable, as `transaction.atomic()` would.

These writes are on the ledger's path of every governed write, so their SQL text is built
once per shape (the model and its columns), not per call: building it through the ORM's
compiler and quoting every column name cost more CPU than sending the statement. And their
parameters are bound on the server, so that psycopg prepares each statement after a few
uses on a connection (the `prepare_threshold` option, toolhub/settings/base.py): PostgreSQL
then skips parsing and planning it, which was 40 % of its CPU for an intent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from .compat.django_cursors import new_server_binding_cursor


def one_statement_writes() -> bool:
    """Whether the database runs several writes as one statement (data-modifying CTEs)."""
    return connection.vendor == "postgresql"


def insert_together(*instances: models.Model) -> None:
    """INSERT new rows all or none; an IntegrityError means none was written.

    Instances are written in order (a row may reference an earlier one: Django's foreign
    keys on PostgreSQL are checked when the statement commits). A primary key the database
    generates is not read back: give rows you need to find again their key in Python.
    """
    if not one_statement_writes():
        with transaction.atomic():
            for instance in instances:
                instance.save(force_insert=True)
        return
    shapes = tuple(_shape(instance) for instance in instances)
    params = [
        value
        for instance, shape in zip(instances, shapes, strict=True)
        for value in _values(instance, _new_row_fields(*shape))
    ]
    with _statement() as cursor:
        cursor.execute(_insert_together_sql(shapes), params)
    for instance in instances:
        instance._state.adding = False
        instance._state.db = connection.alias


def update_then_insert(
    model: type[models.Model], *, where: dict[str, Any], values: dict[str, Any], then: models.Model
) -> bool:
    """UPDATE the rows of `model` whose fields equal `where` to `values`; if any moved,
    INSERT `then` with them. Values are plain values, not expressions.

    Returns whether rows moved. The condition (`state = old`) is what makes one of two
    concurrent movers win: the loser moves nothing and inserts nothing.
    """
    if not one_statement_writes():
        with transaction.atomic():
            if not model._default_manager.filter(**where).update(**values):
                return False
            then.save(force_insert=True)
            return True
    database = _database()
    params = [
        *(_field(model, name).get_db_prep_save(value, database) for name, value in values.items()),
        *(_field(model, name).get_db_prep_value(value, database) for name, value in where.items()),
        *_values(then, _new_row_fields(*_shape(then))),
    ]
    sql = _update_then_insert_sql(model, tuple(where), tuple(values), _shape(then))
    with _statement() as cursor:
        cursor.execute(sql, params)
        moved = cursor.fetchone() is not None
    if moved:
        then._state.adding = False
        then._state.db = connection.alias
    return moved


def bulk_append(instances: Sequence[models.Model]) -> None:
    """INSERT many new rows of one model that nothing reads back (log lines).

    PostgreSQL gets them by COPY, its bulk load: Django's bulk_create sends one array per
    column there, and with client-side binding psycopg quotes every element of those in
    Python, which made writing the invocation log 15 % of a readonly call's CPU
    (docs/performance.md). Elsewhere, bulk_create.
    """
    if not instances:
        return
    model = type(instances[0])
    if not one_statement_writes():
        model._default_manager.bulk_create(instances)
        return
    fields = _new_row_fields(*_shape(instances[0]))
    table = connection.ops.quote_name(model._meta.db_table)
    columns = _column_list(fields)
    # The raw psycopg cursor raises psycopg's exceptions: wrapped, callers catch Django's
    # (DataError for a value the database refuses, OperationalError when it is away).
    with (
        _statement() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for instance in instances:
            copy.write_row(_values(instance, fields))


@contextmanager
def _statement() -> Iterator[Any]:
    if connection.in_atomic_block:
        with transaction.atomic(), new_server_binding_cursor(_database()) as cursor:
            yield cursor
    else:
        with new_server_binding_cursor(_database()) as cursor:
            yield cursor


def _shape(instance: models.Model) -> tuple[type[models.Model], bool]:
    return type(instance), _generated_pk(instance)


def _generated_pk(instance: models.Model) -> bool:
    """Whether the database generates the row's primary key (an AutoField still empty)."""
    return getattr(instance, instance._meta.pk.attname) is None


@cache
def _insert_together_sql(shapes: tuple[tuple[type[models.Model], bool], ...]) -> str:
    """One INSERT per row, the leading ones as CTEs of the last: one statement."""
    *leading, last = (_insert_sql(*shape) for shape in shapes)
    if not leading:
        return last
    return "WITH " + ", ".join(f"w{n} AS ({part})" for n, part in enumerate(leading)) + " " + last


@cache
def _update_then_insert_sql(
    model: type[models.Model],
    where: tuple[str, ...],
    values: tuple[str, ...],
    then: tuple[type[models.Model], bool],
) -> str:
    quote, meta = connection.ops.quote_name, model._meta
    assignments = ", ".join(f"{quote(_column(_field(model, name)))} = %s" for name in values)
    condition = " AND ".join(f"{quote(_column(_field(model, name)))} = %s" for name in where)
    then_fields = _new_row_fields(*then)
    selected = ", ".join(_typed_placeholder(field) for field in then_fields)
    return (
        f"WITH moved AS (UPDATE {quote(meta.db_table)} SET {assignments} WHERE {condition} "
        f"RETURNING {quote(_column(meta.pk))}) "
        f"INSERT INTO {quote(then[0]._meta.db_table)} ({_column_list(then_fields)}) "
        f"SELECT {selected} FROM moved LIMIT 1 RETURNING 1"
    )


def _insert_sql(model: type[models.Model], generated_pk: bool) -> str:
    fields = _new_row_fields(model, generated_pk)
    table = connection.ops.quote_name(model._meta.db_table)
    return f"INSERT INTO {table} ({_column_list(fields)}) VALUES ({_placeholders(fields)})"


def _placeholders(fields: Sequence[models.Field]) -> str:
    return ", ".join(["%s"] * len(fields))


def _typed_placeholder(field: models.Field) -> str:
    """A parameter in a SELECT list has no column to take its type from (bound on the server,
    a string or None would be text): cast it to the column's type. Without its length, so
    that a value too long for a varchar(n) stays an error instead of being cut."""
    return f"CAST(%s AS {re.sub(r'[(][^)]*[)]', '', field.db_type(connection) or '')})"


@cache
def _new_row_fields(model: type[models.Model], generated_pk: bool) -> tuple[models.Field, ...]:
    """The columns a new row is written with: a primary key the database generates is left
    to the database."""
    return tuple(
        field for field in model._meta.concrete_fields if not (field.primary_key and generated_pk)
    )


def _column_list(fields: Sequence[models.Field]) -> str:
    """The quoted column names of concrete fields, comma-separated."""
    return ", ".join(connection.ops.quote_name(_column(field)) for field in fields)


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise ValueError(f"{model.__name__}.{name} is a relation seen from the other side, not a column")
    return field


def _column(field: models.Field) -> str:
    if field.column is None:
        raise ValueError(f"{field} is not a concrete field: it has no column")
    return field.column


def _values(instance: models.Model, fields: Sequence[models.Field]) -> list[Any]:
    """The row's values as the database takes them, filling the model's own on the way
    (auto_now timestamps), as save() does."""
    database = _database()
    return [field.get_db_prep_save(field.pre_save(instance, True), database) for field in fields]


def _database() -> BaseDatabaseWrapper:
    """The connection itself: every attribute read through `django.db.connection`, a proxy,
    is a lookup in a context-local, which a row's values would repeat for every field."""
    return connections[DEFAULT_DB_ALIAS]
