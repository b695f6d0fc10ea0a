"""manage.py create_partitions: the invocation log's and audit events' partitions, ahead of time.

Idempotent: creates only what is missing, and says what it created and how many rows sit in
each default partition. The beat job `audit.create_partitions` does the same every hour.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.audit import partitioning
from apps.audit.partitions import LOGS, create_ahead, partitioned


class Command(BaseCommand):
    help = "Create the missing time partitions of the invocation log and the audit events (PostgreSQL)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--ahead-days",
            type=int,
            default=None,
            help="Days ahead to cover (default TOOLHUB_LOG_PARTITIONS_AHEAD_DAYS).",
        )
        parser.add_argument(
            "--back-days",
            type=int,
            default=0,
            help="Also cover this many past days; rows of those days in the default partition move in.",
        )

    def handle(self, *args: Any, ahead_days: int | None, back_days: int, **options: Any) -> None:
        if not partitioned():
            self.stdout.write("This database has no partitions (only PostgreSQL's do): nothing to do.")
            return
        for log, report in zip(LOGS, create_ahead(ahead_days=ahead_days, back_days=back_days), strict=True):
            created = ", ".join(report.created) if report.created else "none (all there already)"
            self.stdout.write(f"{log.table}: created {created}")
            default = partitioning.default_partition_name(log.table)
            if report.default_rows:
                self.stdout.write(
                    self.style.WARNING(
                        f"{log.table}: {report.default_rows} rows in {default}: "
                        "no partition covers their time"
                    )
                )
            else:
                self.stdout.write(f"{log.table}: {default} is empty")
