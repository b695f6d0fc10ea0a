"""What the import commands share: their common options, the tenant they name, the progress
they show and the report they print."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from apps.imports.import_tail import SKIPPED, ImportReport
from apps.imports.review import import_review
from apps.tenancy.models import Tenant
from apps.tenancy.selectors import tenant_by_slug


def add_publish_and_grant(parser: CommandParser) -> None:
    parser.add_argument("--publish", action="store_true", help="Publish the drafts made (refused, "
                        "with nothing imported, if lint finds errors in one).")
    parser.add_argument("--grant", action="append", default=[], metavar="AGENT",
                        help="Grant the imported tools to this agent of the tenant (repeatable).")


def tenant_named(options: dict[str, Any]) -> Tenant:
    tenant = tenant_by_slug(slug=options["tenant"])
    if tenant is None:
        raise CommandError(f"No tenant with slug {options['tenant']!r}.")
    return tenant


def comma_list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def print_report(command: BaseCommand, report: ImportReport) -> None:
    """One line per operation or tool, its lint findings under it (but those most drafts have,
    said once after the list: apps/imports/review.py), then the grants."""
    review = import_review(report.results)
    command.stdout.write(
        f"Imported {report.title or 'the document'} for upstream {report.upstream}"
        + (f" ({report.base_url})" if report.base_url else "") + ":"
    )
    for result in report.results:
        version = result.version
        where = f" → {result.tool} v{version.number} ({version.status})" if version else ""
        command.stdout.write(f"  {result.key}: {result.summary}{where}")
        for f in review.own(result):
            command.stdout.write(f"      {f.severity} {f.code} at {f.field}: {f.fix}")
    for line in review.lines():
        command.stdout.write(line)
    for grant in report.granted:
        command.stdout.write(f"  granted {grant}")
    if report.removed:
        command.stdout.write("No longer in the document (the API removed them):")
    for removed in report.removed:
        if removed.deprecated:
            state = "deprecated v" + ", v".join(map(str, removed.deprecated))
        else:
            state = "published v" + ", v".join(map(str, removed.published)) if removed.published else \
                "nothing published"
        command.stdout.write(f"  {removed.key}: {removed.tool} ({state})")
    if any(r.published for r in report.removed):
        command.stderr.write("Agents still call those published versions: deprecate them with "
                             "--deprecate-removed.")
    if any(r.outcome == SKIPPED for r in report.results):
        command.stderr.write("Skipped ones were not imported; see why above.")


class ProgressBar:
    """Operations done of all, on `out`: one bar redrawn in place on a terminal, else a plain
    line at every tenth (logs and pipes get no carriage returns)."""

    WIDTH = 30

    def __init__(self, out: OutputWrapper, what: str = "operations") -> None:
        self.out = out
        self.what = what
        self.tty = out.isatty()
        self._shown = 0
        self._drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            if done < total and time.monotonic() - self._drawn < 0.1:
                return
            self._drawn = time.monotonic()
            filled = self.WIDTH * done // max(total, 1)
            end = "\n" if done == total else ""
            bar = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}]"
            self.out.write(f"\r{bar} {done}/{total} {self.what}{end}", ending="")
            self.out.flush()
            return
        tenth = 10 * done // max(total, 1)
        if tenth > self._shown:
            self._shown = tenth
            self.out.write(f"{done}/{total} {self.what} imported")
