"""Partitions of the invocation log and the audit events: created ahead, dropped past retention.

On PostgreSQL both logs are partitioned by time (migration audit 0004, SQL in
partitioning.py): the invocation log by day, the audit events by week. The beat jobs
(apps/audit/tasks.py) and the commands `create_partitions` and `apply_retention` call
`create_ahead` and `apply_retention` here. Retention drops whole partitions, never rows;
a partition is dropped only once all of it is older than the retention, and the default
partition is never dropped. On other databases (SQLite under `make run`) there are no
partitions and retention deletes the old rows. The ledger has its own tables: nothing here
touches it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, models, transaction
from django.db.models import Min
from django.utils import timezone

from . import partitioning
from .models import AuditEvent, Invocation

logger = logging.getLogger("toolhub.audit.partitions")


@dataclass(frozen=True)
class TimeLog:
    """One log partitioned by time: its model, time column and days per partition."""

    name: str
    model: type[models.Model]
    column: str
    period_days: int
    retention_setting: str

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    @property
    def retention_days(self) -> int:
        return int(getattr(settings, self.retention_setting))


# The periods are those of migration audit 0004; why day and week: docs/log-partitions.md.
LOGS = (
    TimeLog("invocations", Invocation, "created_at", 1, "TOOLHUB_INVOCATION_LOG_RETENTION_DAYS"),
    TimeLog("audit", AuditEvent, "at", 7, "TOOLHUB_AUDIT_RETENTION_DAYS"),
)


def partitioned() -> bool:
    return connection.vendor == "postgresql"


@dataclass
class CreateReport:
    log: str
    created: list[str] = field(default_factory=list)
    default_rows: int = 0


def create_ahead(
    *,
    today: date | None = None,
    ahead_days: int | None = None,
    back_days: int = 0,
    logs: Sequence[TimeLog] = LOGS,
) -> list[CreateReport]:
    """Create the missing partitions from `back_days` ago to `ahead_days` ahead (of each of
    `logs`), and count the rows the default partitions hold (rows no partition covered)."""
    today = today or timezone.now().date()
    ahead = settings.TOOLHUB_LOG_PARTITIONS_AHEAD_DAYS if ahead_days is None else ahead_days
    reports = [CreateReport(log.name) for log in logs]
    if not partitioned():
        return reports
    for log, report in zip(logs, reports, strict=True):
        starts = sorted(
            {
                partitioning.period_start(today + timedelta(days=n), log.period_days)
                for n in range(-back_days, ahead + 1)
            }
        )
        for start in starts:
            try:
                with _ddl() as cursor:
                    if partitioning.create_partition(cursor, log.table, log.period_days, start):
                        report.created.append(partitioning.partition_name(log.table, start))
            except OperationalError as exc:
                logger.warning(
                    "partition of %s from %s not created this time: %s", log.table, start, _first_line(exc)
                )
        with connection.cursor() as cursor:
            report.default_rows = partitioning.default_partition_rows(cursor, log.table)
        if report.created:
            logger.info("created partitions of %s: %s", log.table, ", ".join(report.created))
        if report.default_rows:
            logger.warning(
                "%d rows of %s are in its default partition %s: no partition covered their time. "
                "Create partitions for their days (manage.py create_partitions --back-days N moves "
                "them there) or leave them; retention never drops the default partition.",
                report.default_rows,
                log.table,
                partitioning.default_partition_name(log.table),
            )
    return reports


@dataclass
class RetentionReport:
    log: str
    retention_days: int
    cutoff: datetime
    partitioned: bool
    dropped: list[str] = field(default_factory=list)
    postponed: list[str] = field(default_factory=list)  # their table stayed locked: next run
    deleted_rows: int = 0


def retention_cutoff(log: TimeLog, now: datetime) -> datetime:
    """Rows before this instant are past retention: midnight UTC, `retention_days` ago."""
    return partitioning.midnight(now.astimezone(partitioning.UTC).date() - timedelta(days=log.retention_days))


def apply_retention(*, now: datetime | None = None, dry_run: bool = False) -> list[RetentionReport]:
    """Drop each partition whose whole range is past its log's retention (PostgreSQL), or
    delete the rows past it (other databases). With dry_run, report only."""
    now = now or timezone.now()
    reports = []
    for log in LOGS:
        report = RetentionReport(log.name, log.retention_days, retention_cutoff(log, now), partitioned())
        reports.append(report)
        if report.partitioned:
            _drop_past_partitions(log, report, dry_run=dry_run)
        else:
            old = log.model._default_manager.filter(**{f"{log.column}__lt": report.cutoff})
            report.deleted_rows = old.count() if dry_run else old.delete()[0]
        if not dry_run and (report.dropped or report.deleted_rows):
            logger.info(
                "retention of %s (%d days, before %s): %s",
                log.table,
                log.retention_days,
                report.cutoff.isoformat(),
                f"dropped partitions {', '.join(report.dropped)}"
                if report.dropped
                else f"deleted {report.deleted_rows} rows",
            )
    return reports


def _drop_past_partitions(log: TimeLog, report: RetentionReport, *, dry_run: bool) -> None:
    with connection.cursor() as cursor:
        past = [p for p in partitioning.partitions_of(cursor, log.table) if p.end and p.end <= report.cutoff]
    for partition in past:
        if dry_run:
            report.dropped.append(partition.name)
            continue
        try:
            with _ddl() as cursor:
                partitioning.drop_partition(cursor, log.table, partition.name)
        except OperationalError as exc:
            report.postponed.append(partition.name)
            logger.warning(
                "retention of %s postponed %s to its next run: %s",
                log.table,
                partition.name,
                _first_line(exc),
            )
        else:
            report.dropped.append(partition.name)


# Dropping a partition locks its table (ACCESS EXCLUSIVE) for a moment, but waiting for that
# lock behind a long query would queue every log write behind the wait: give up instead,
# and let the next hourly run try again.
LOCK_TIMEOUT_MS = 5000


@contextmanager
def _ddl() -> Iterator[Any]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = {int(LOCK_TIMEOUT_MS)}")
        yield cursor


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass(frozen=True)
class LogFigures:
    log: str
    oldest_kept_day: datetime | None  # midnight UTC of the oldest day with rows; None: empty
    default_partition_rows: int  # 0 off PostgreSQL


def log_figures() -> list[LogFigures]:
    """Each log's oldest kept day and default partition rows; one statement on PostgreSQL."""
    if partitioned():
        parts = []
        for log in LOGS:
            default = connection.ops.quote_name(partitioning.default_partition_name(log.table))
            table, column = connection.ops.quote_name(log.table), connection.ops.quote_name(log.column)
            parts.append(f"(SELECT min({column}) FROM {table}), (SELECT count(*) FROM {default})")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {', '.join(parts)}")
            row = cursor.fetchone()
        values = [(row[2 * n], int(row[2 * n + 1])) for n in range(len(LOGS))]
    else:
        values = [(log.model._default_manager.aggregate(oldest=Min(log.column))["oldest"], 0) for log in LOGS]
    return [
        LogFigures(
            log.name,
            partitioning.midnight(oldest.astimezone(partitioning.UTC).date()) if oldest else None,
            rows,
        )
        for log, (oldest, rows) in zip(LOGS, values, strict=True)
    ]
