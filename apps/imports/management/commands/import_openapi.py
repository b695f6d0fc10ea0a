"""`manage.py import_openapi SPEC --tenant SLUG --upstream NAME ...`: an OpenAPI document's
operations as draft tool versions of a tenant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.errors import ImportRefused
from apps.imports.fetch import document_fetch
from apps.imports.services import openapi_import

from ._import_cli import add_publish_and_grant, comma_list, print_report, tenant_named

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
        add_publish_and_grant(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options)
        spec: str = options["spec"]
        fetched_from = spec if spec.startswith(("http://", "https://")) else None
        operations = comma_list(options["operations"])
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
