"""`manage.py import_openapi SPEC --tenant SLUG --upstream NAME ...`: an OpenAPI document's
operations as draft tool versions of a tenant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.errors import ImportRefused
from apps.imports.fetch import document_fetch
from apps.imports.limits import ImportLimits
from apps.imports.openapi_services import openapi_import

from ._import_cli import ProgressBar, add_publish_and_grant, comma_list, print_report, tenant_named

ACTOR = "cli:import_openapi"


class Command(BaseCommand):
    help = (
        "Import the operations of an OpenAPI 3.0 or 3.1 document (a file or an http(s) URL, "
        "fetched through the egress policy; JSON or YAML) as draft tool versions of a tenant, "
        "calling the named upstream. A second import makes drafts only for the operations that "
        "changed, and lists the tools of operations the document no longer has. All or nothing, in "
        "one transaction; the progress is shown on standard error."
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
        parser.add_argument("--deprecate-removed", action="store_true", help="Deprecate the published "
                            "versions of tools imported from operations the document no longer has.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options)
        spec: str = options["spec"]
        fetched_from = spec if spec.startswith(("http://", "https://")) else None
        operations = comma_list(options["operations"])
        try:
            text = document_fetch(url=spec) if fetched_from else _read(Path(spec))
            report = openapi_import(
                tenant=tenant, document_text=text, upstream=options["upstream"], actor=ACTOR,
                base_url=options["base_url"], fetched_from=fetched_from, credential=options["credential"],
                operation_ids=operations or None, publish=options["publish"], grant_agents=options["grant"],
                deprecate_removed=options["deprecate_removed"], progress=ProgressBar(self.stderr),
            )
        except OSError as error:
            raise CommandError(f"Cannot read {spec}: {error.strerror}.") from error
        except ImportRefused as error:
            raise CommandError(f"Nothing was imported. {error}") from error
        print_report(self, report)


def _read(path: Path) -> bytes:
    """The file, refused before it is read when it is past the import's size limit."""
    ImportLimits.from_settings().check_document_size(path.stat().st_size, f"The file {path}")
    return path.read_bytes()
