"""What the import commands share: their common options, the tenant they name, and the
report they print."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.review import import_review
from apps.imports.services import SKIPPED, ImportReport
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
    if any(r.outcome == SKIPPED for r in report.results):
        command.stderr.write("Skipped ones were not imported; see why above.")
