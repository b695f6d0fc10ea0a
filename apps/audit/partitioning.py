"""PostgreSQL range partitions by time: the SQL, on a cursor, for a table and its time column.

Used by the migration that partitions the invocation log and the audit events, and by the
jobs that create partitions ahead and drop those past retention (apps/audit/partitions.py).
Bounds are UTC midnights; a partition of `period_days` = 7 starts on a Monday. Each table
has a default partition that catches rows no partition covers; creating a partition moves
the default partition's rows of its range into it first, so a late partition never fails
on rows that arrived before it.

On PostgreSQL a primary key of a partitioned table must contain the partition key: the
table's key is (id, time), while Django keeps `id` as the model's primary key (the pattern
of django-postgres-extra). Ids stay unique: one identity sequence numbers every row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

_BOUNDS = re.compile(r"FROM \('([^']+)'\) TO \('([^']+)'\)")

Cursor = Any  # a DB-API cursor of psycopg, through Django's wrapper


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime | None  # None: the default partition
    end: datetime | None


def midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def period_start(day: date, period_days: int) -> date:
    """The first day of the period holding `day`: itself, or the Monday of its week."""
    return day - timedelta(days=day.weekday()) if period_days == 7 else day


def partition_name(table: str, start: date) -> str:
    return f"{table}_p{start:%Y%m%d}"


def default_partition_name(table: str) -> str:
    return f"{table}_default"


def partitions_of(cursor: Cursor, table: str) -> list[Partition]:
    """The table's partitions, oldest first, the default partition last."""
    cursor.execute(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(%s)",
        [table],
    )
    found = []
    for name, bound in cursor.fetchall():
        match = _BOUNDS.search(bound)
        if match is None:
            found.append(Partition(name, None, None))
        else:
            start, end = (datetime.fromisoformat(value).astimezone(UTC) for value in match.groups())
            found.append(Partition(name, start, end))
    return sorted(found, key=lambda p: (p.start is None, p.start or datetime.min.replace(tzinfo=UTC)))


def create_partition(cursor: Cursor, table: str, period_days: int, start: date) -> bool:
    """Create the partition of the period starting `start`, moving into it the rows the
    default partition holds for its range. False when a partition already covers any of it."""
    lower, upper = midnight(start), midnight(start + timedelta(days=period_days))
    for existing in partitions_of(cursor, table):
        if existing.start and existing.end and existing.start < upper and lower < existing.end:
            return False
    name, default = partition_name(table, start), default_partition_name(table)
    column = _partition_column(cursor, table)
    cursor.execute(f'CREATE TABLE "{name}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
    if table_exists(cursor, default):
        cursor.execute(
            f'WITH moved AS (DELETE FROM "{default}" WHERE "{column}" >= %s AND "{column}" < %s '
            f'RETURNING *) INSERT INTO "{name}" SELECT * FROM moved',
            [lower, upper],
        )
    cursor.execute(
        f'ALTER TABLE "{table}" ATTACH PARTITION "{name}" FOR VALUES FROM (%s) TO (%s)', [lower, upper]
    )
    return True


def drop_partition(cursor: Cursor, table: str, name: str) -> None:
    cursor.execute(f'ALTER TABLE "{table}" DETACH PARTITION "{name}"')
    cursor.execute(f'DROP TABLE "{name}"')


def default_partition_rows(cursor: Cursor, table: str) -> int:
    default = default_partition_name(table)
    if not table_exists(cursor, default):
        return 0
    cursor.execute(f'SELECT count(*) FROM "{default}"')
    return int(cursor.fetchone()[0])


def table_exists(cursor: Cursor, name: str) -> bool:
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    return bool(cursor.fetchone()[0])


def _partition_column(cursor: Cursor, table: str) -> str:
    cursor.execute(
        "SELECT a.attname FROM pg_partitioned_table p JOIN pg_attribute a "
        "ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0] WHERE p.partrelid = to_regclass(%s)",
        [table],
    )
    return str(cursor.fetchone()[0])


def partition_table(cursor: Cursor, table: str, column: str, period_days: int, ahead_days: int) -> None:
    """Turn a plain table into one partitioned by range of `column`, keeping its rows, ids,
    indexes, checks and foreign keys (under the same names) and its id sequence's position.

    Partitions are made for every period that holds rows and for today up to `ahead_days`
    ahead, plus the default partition. Runs inside the migration's transaction.
    """
    rebuild = _rebuild(cursor, table, f'PARTITION BY RANGE ("{column}")', primary_key=f'"id", "{column}"')
    cursor.execute(f'CREATE TABLE "{default_partition_name(table)}" PARTITION OF "{table}" DEFAULT')
    cursor.execute(f'SELECT DISTINCT ("{column}" AT TIME ZONE \'UTC\')::date FROM "{rebuild.aside}"')
    days = {period_start(row[0], period_days) for row in cursor.fetchall()}
    today = datetime.now(UTC).date()
    days |= {period_start(today + timedelta(days=n), period_days) for n in range(ahead_days + 1)}
    for start in sorted(days):
        create_partition(cursor, table, period_days, start)
    _copy_rows_and_finish(cursor, rebuild)


def unpartition_table(cursor: Cursor, table: str) -> None:
    """The reverse of partition_table: one plain table with the same rows, key on `id`."""
    _copy_rows_and_finish(cursor, _rebuild(cursor, table, "", primary_key='"id"'))


@dataclass(frozen=True)
class _Rebuild:
    """What the replacement of a table must get back after its rows are copied."""

    table: str
    primary_key: str
    indexes: list[str]
    foreign_keys: list[tuple[str, str]]

    @property
    def aside(self) -> str:
        return f"{self.table}_unpartitioned"


def _rebuild(cursor: Cursor, table: str, partition_clause: str, *, primary_key: str) -> _Rebuild:
    """Rename the table aside and create its replacement, empty, without indexes yet (they
    are built after the copy, which is faster than keeping them up to date row by row)."""
    cursor.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = to_regclass(%s) AND NOT indisprimary",
        [table],
    )
    indexes = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = to_regclass(%s) AND contype = 'f'",
        [table],
    )
    rebuild = _Rebuild(table, primary_key, indexes, [tuple(row) for row in cursor.fetchall()])
    cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{rebuild.aside}"')
    cursor.execute(
        f'CREATE TABLE "{table}" (LIKE "{rebuild.aside}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
        f"INCLUDING IDENTITY) {partition_clause}"
    )
    return rebuild


def _copy_rows_and_finish(cursor: Cursor, rebuild: _Rebuild) -> None:
    table = rebuild.table
    cursor.execute(f'INSERT INTO "{table}" SELECT * FROM "{rebuild.aside}"')
    cursor.execute(f'DROP TABLE "{rebuild.aside}"')
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{table}_pkey" PRIMARY KEY ({rebuild.primary_key})')
    for definition in rebuild.indexes:
        cursor.execute(definition)
    for name, definition in rebuild.foreign_keys:
        cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
    # The copy's identity got a sequence of its own; it takes the dropped one's name and
    # continues after the highest id.
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    cursor.execute(f'ALTER SEQUENCE {cursor.fetchone()[0]} RENAME TO "{table}_id_seq"')
    cursor.execute(
        f'SELECT setval(%s, COALESCE((SELECT max(id) FROM "{table}"), 0) + 1, false)', [f"{table}_id_seq"]
    )
