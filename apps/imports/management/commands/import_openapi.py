"""`manage.py import_openapi SPEC --tenant SLUG --upstream NAME ...`: an OpenAPI document's
operations as draft tool versions of a tenant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.errors import ImportRefused
from apps.imports.fetch import document_fetch
from apps.imports.services import SKIPPED, ImportReport, openapi_import
from apps.tenancy.selectors import tenant_by_slug

ACTOR = "cli:import_openapi"


class Command(BaseCommand):
    help = (
        "Import the operations of an OpenAPI 3.0 or 3.1 document (a file or an http(s) URL, "
        "fetched through the egress policy; JSON or YAML) as draft tool versions of a tenant, "
        "calling the named upstream. A second import makes drafts only for the operations that "
        "changed. All or nothing, in one transaction."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("spec", help="The document: a file path or an http(s) URL.")
        parser.add_argument("--tenant", required=True, help="The tenant's slug.")
        parser.add_argument("--upstream", required=True, help="The upstream the tools call (its name).")
        parser.add_argument("--base-url", help="The upstream's base URL, if it is created (default: the "
                            "document's first server).")
        parser.add_argument("--credential", help="The credential of the upstream, if it is created.")
        parser.add_argument("--operations", help="Only these operations: operationIds, comma-separated.")
        parser.add_argument("--publish", action="store_true", help="Publish the drafts made (refused, "
                            "with nothing imported, if lint finds errors in one).")
        parser.add_argument("--grant", action="append", default=[], metavar="AGENT",
                            help="Grant the imported tools to this agent of the tenant (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_by_slug(slug=options["tenant"])
        if tenant is None:
            raise CommandError(f"No tenant with slug {options['tenant']!r}.")
        spec: str = options["spec"]
        fetched_from = spec if spec.startswith(("http://", "https://")) else None
        operations = [o.strip() for o in (options["operations"] or "").split(",") if o.strip()]
        try:
            text = document_fetch(url=spec) if fetched_from else Path(spec).read_bytes()
            report = openapi_import(
                tenant=tenant, document_text=text, upstream=options["upstream"], actor=ACTOR,
                base_url=options["base_url"], fetched_from=fetched_from, credential=options["credential"],
                operation_ids=operations or None, publish=options["publish"], grant_agents=options["grant"],
            )
        except OSError as error:
            raise CommandError(f"Cannot read {spec}: {error.strerror}.") from error
        except ImportRefused as error:
            raise CommandError(f"Nothing was imported. {error}") from error
        print_report(self, report)


def print_report(command: BaseCommand, report: ImportReport) -> None:
    """One line per operation or tool, its lint findings under it, then the grants."""
    command.stdout.write(
        f"Imported {report.title or 'the document'} for upstream {report.upstream}"
        + (f" ({report.base_url})" if report.base_url else "") + ":"
    )
    for result in report.results:
        version = result.version
        where = f" → {result.tool} v{version.number} ({version.status})" if version else ""
        command.stdout.write(f"  {result.key}: {result.summary}{where}")
        for f in result.findings:
            command.stdout.write(f"      {f.severity} {f.code} at {f.field}: {f.fix}")
    for grant in report.granted:
        command.stdout.write(f"  granted {grant}")
    if any(r.outcome == SKIPPED for r in report.results):
        command.stderr.write("Skipped ones were not imported; see why above.")
