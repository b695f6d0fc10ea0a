"""`manage.py rollup_invocations [--since WHEN]`: roll the invocation log up into hourly rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.dashboards.rollups import roll_up_invocations


def moment(value: str) -> datetime:
    """An ISO date or datetime (UTC unless it says otherwise), or an age: 36h, 7d."""
    if value[:-1].isdigit() and value[-1] in "hd":
        unit = "hours" if value[-1] == "h" else "days"
        return timezone.now() - timedelta(**{unit: int(value[:-1])})
    try:
        parsed = parse_datetime(value) or parse_datetime(f"{value}T00:00")
    except ValueError as error:  # well formed but impossible: 2026-02-30
        raise CommandError(f"--since {value!r} is not a date that exists ({error}).") from None
    if parsed is None:
        raise CommandError(
            f"--since {value!r} is neither an ISO date or datetime nor an age such as 36h or 7d."
        )
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Roll the invocation log up into the dashboard's hourly rows, up to the current hour. "
        "Without --since, what the beat job does: the hours since the last run and the few "
        "before it (or the whole log, the first time). Rerunning an hour replaces its rows."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", type=str, help="Roll up again from this hour: 2026-11-01, "
                            "2026-11-01T08:00, or an age such as 36h or 7d (a backfill).")

    def handle(self, *args: Any, **options: Any) -> None:
        since = moment(options["since"]) if options["since"] else None
        report = roll_up_invocations(since=since)
        self.stdout.write(
            f"Rolled up {report.start:%Y-%m-%d %H:00} to {report.end:%Y-%m-%d %H:00} UTC: "
            f"{report.invocation_rows} call rows, {report.latency_rows} latency rows."
        )
