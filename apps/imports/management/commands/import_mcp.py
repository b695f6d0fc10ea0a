"""`manage.py import_mcp --tenant SLUG --upstream NAME ...`: the tools an MCP server lists as
draft tool versions of a tenant."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.errors import ImportRefused
from apps.imports.services import mcp_import
from apps.tenancy.selectors import tenant_by_slug

from .import_openapi import print_report

ACTOR = "cli:import_mcp"


class Command(BaseCommand):
    help = (
        "Import the tools an MCP server lists (an upstream of kind mcp) as draft tool versions of "
        "a tenant calling them through the mcp executor; side effects are suggested from the "
        "tools' annotations, for a curator to confirm. A second import makes drafts only for the "
        "tools whose definition changed. All or nothing, in one transaction."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="The tenant's slug.")
        parser.add_argument("--upstream", required=True, help="The MCP server's upstream (its name).")
        parser.add_argument("--tools", help="Only these tools: the server's names, comma-separated.")
        parser.add_argument("--publish", action="store_true", help="Publish the drafts made (refused, "
                            "with nothing imported, if lint finds errors in one).")
        parser.add_argument("--grant", action="append", default=[], metavar="AGENT",
                            help="Grant the imported tools to this agent of the tenant (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_by_slug(slug=options["tenant"])
        if tenant is None:
            raise CommandError(f"No tenant with slug {options['tenant']!r}.")
        tools = [t.strip() for t in (options["tools"] or "").split(",") if t.strip()]
        try:
            report = mcp_import(
                tenant=tenant, upstream=options["upstream"], actor=ACTOR, tool_names=tools or None,
                publish=options["publish"], grant_agents=options["grant"],
            )
        except ImportRefused as error:
            raise CommandError(f"Nothing was imported. {error}") from error
        print_report(self, report)
