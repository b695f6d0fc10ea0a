"""manage.py apply_retention [--dry-run]: drop the log partitions past retention.

TOOLHUB_INVOCATION_LOG_RETENTION_DAYS and TOOLHUB_AUDIT_RETENTION_DAYS say how many days are
kept. The beat job `audit.apply_retention` does the same every hour. The ledger is untouched.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.audit.partitions import LOGS, apply_retention


class Command(BaseCommand):
    help = "Drop the invocation log's and audit events' partitions older than their retention."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Say what would go, drop nothing.")

    def handle(self, *args: Any, dry_run: bool, **options: Any) -> None:
        verb = "would drop" if dry_run else "dropped"
        for log, report in zip(LOGS, apply_retention(dry_run=dry_run), strict=True):
            head = f"{log.table} (keeps {report.retention_days} days, from {report.cutoff:%Y-%m-%d}):"
            if report.partitioned:
                self.stdout.write(f"{head} {verb} {', '.join(report.dropped) or 'nothing'}")
                if report.postponed:
                    self.stdout.write(
                        self.style.WARNING(
                            f"{log.table}: {', '.join(report.postponed)} stayed locked by other sessions; "
                            "run again later (the hourly job will)"
                        )
                    )
            else:
                self.stdout.write(
                    f"{head} {'would delete' if dry_run else 'deleted'} {report.deleted_rows} rows"
                )
