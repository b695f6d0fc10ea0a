"""`manage.py import_mcp --tenant SLUG --upstream NAME ...`: the tools an MCP server lists as
draft tool versions of a tenant."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.errors import ImportRefused
from apps.imports.mcp_services import mcp_import

from ._import_cli import add_publish_and_grant, comma_list, print_report, tenant_named

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
        add_publish_and_grant(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options)
        tools = comma_list(options["tools"])
        try:
            report = mcp_import(
                tenant=tenant, upstream=options["upstream"], actor=ACTOR, tool_names=tools or None,
                publish=options["publish"], grant_agents=options["grant"],
            )
        except ImportRefused as error:
            raise CommandError(f"Nothing was imported. {error}") from error
        print_report(self, report)
