"""Writes that must land together, in as few round trips as the database allows.

On PostgreSQL a data-modifying CTE (`WITH a AS (INSERT …) INSERT …`) is one statement, so
its parts commit together or not at all, in one round trip instead of BEGIN, one per row,
COMMIT. Other databases (SQLite under `make run`) get the same guarantee from a
transaction. Outside a transaction a single statement is atomic by itself; inside the
caller's, it runs in a savepoint so that its failure (a unique key taken) leaves the
caller's transaction usable, as `transaction.atomic()` would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, models, transaction

from .compat.django_sql import update_sql


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
    statements = [_insert_sql(instance) for instance in instances]
    *leading, (sql, _) = statements
    if leading:
        sql = "WITH " + ", ".join(f"w{n} AS ({part})" for n, (part, _) in enumerate(leading)) + " " + sql
    params = [param for _, part_params in statements for param in part_params]
    with _statement() as cursor:
        cursor.execute(sql, params)
    for instance in instances:
        instance._state.adding = False
        instance._state.db = connection.alias


def update_then_insert(queryset: models.QuerySet, values: dict[str, Any], then: models.Model) -> bool:
    """UPDATE the rows of `queryset` with `values`; if any moved, INSERT `then` with them.

    Returns whether rows moved. The condition in the queryset (`state = old`) is what makes
    one of two concurrent movers win: the loser moves nothing and inserts nothing.
    """
    if not one_statement_writes():
        with transaction.atomic():
            if not queryset.update(**values):
                return False
            then.save(force_insert=True)
            return True
    update, update_params = update_sql(queryset, values, using=connection.alias)
    pk_column = connection.ops.quote_name(queryset.model._meta.pk.column)
    columns, placeholders, insert_params = _row(then)
    sql = (
        f"WITH moved AS ({update} RETURNING {pk_column}) "
        f"INSERT INTO {connection.ops.quote_name(then._meta.db_table)} ({columns}) "
        f"SELECT {placeholders} FROM moved LIMIT 1 RETURNING 1"
    )
    with _statement() as cursor:
        cursor.execute(sql, [*update_params, *insert_params])
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
    fields = _new_row_fields(instances[0])
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
        with transaction.atomic(), connection.cursor() as cursor:
            yield cursor
    else:
        with connection.cursor() as cursor:
            yield cursor


def _insert_sql(instance: models.Model) -> tuple[str, Sequence[Any]]:
    columns, placeholders, params = _row(instance)
    table = connection.ops.quote_name(instance._meta.db_table)
    return f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", params


def _row(instance: models.Model) -> tuple[str, str, list[Any]]:
    """Columns, placeholders and parameters of a new row, prepared as Model.save() would."""
    fields = _new_row_fields(instance)
    columns = _column_list(fields)
    return columns, ", ".join(["%s"] * len(fields)), _values(instance, fields)


def _new_row_fields(instance: models.Model) -> list[models.Field]:
    """The columns a new row is written with: a database-generated primary key (an
    AutoField still empty) is left to the database."""
    return [
        field
        for field in instance._meta.concrete_fields
        if not (field.primary_key and getattr(instance, field.attname) is None)
    ]


def _column_list(fields: Sequence[models.Field]) -> str:
    """The quoted column names of concrete fields, comma-separated."""
    quoted = []
    for field in fields:
        if field.column is None:
            raise ValueError(f"{field} is not a concrete field: it has no column")
        quoted.append(connection.ops.quote_name(field.column))
    return ", ".join(quoted)


def _values(instance: models.Model, fields: Sequence[models.Field]) -> list[Any]:
    """The row's values as the database takes them, filling the model's own on the way
    (auto_now timestamps), as save() does."""
    return [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
