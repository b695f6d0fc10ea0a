"""`manage.py sync_upstreams [--tenant SLUG] [--upstream NAME]`: check MCP servers for drift
from the definitions their published tools were made from, one line per finding."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.imports.sync import SyncReport, upstream_sync, upstreams_to_sync

from ._import_cli import tenant_named

ACTOR = "cli:sync_upstreams"


class Command(BaseCommand):
    help = (
        "List the tools of MCP servers (upstreams of kind mcp) and compare them with the "
        "definitions the published versions of their tools were made from. Each change "
        "(description, schema, annotations, a tool removed or added) is recorded as a drift "
        "finding for a curator to review; nothing is applied. An unreachable server is reported "
        "and checked again next time."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Only this tenant's tools (its slug).")
        parser.add_argument("--upstream", help="Only this upstream (its name).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options) if options["tenant"] else None
        upstreams = list(upstreams_to_sync(tenant=tenant, name=options["upstream"]))
        if not upstreams:
            where = f" named {options['upstream']!r}" if options["upstream"] else ""
            owner = f" that tenant {tenant.slug} may use" if tenant else ""
            raise CommandError(f"No MCP upstream{where}{owner}.")
        unreached = []
        for upstream in upstreams:
            report = upstream_sync(upstream=upstream, actor=ACTOR, tenant=tenant)
            print_sync(self, report)
            if not report.reached:
                unreached.append(report.label)
        if unreached:
            # A check that compared nothing is not a clean bill of health: scripts and beat
            # watchers must see it fail.
            raise CommandError(
                f"{len(unreached)} of {len(upstreams)} MCP server(s) could not be reached, so "
                f"nothing was compared for {', '.join(unreached)}. Check that they run and that "
                "the egress policy (TOOLHUB_EGRESS_ALLOW) allows them, then run sync_upstreams again."
            )


def print_sync(command: BaseCommand, report: SyncReport) -> None:
    """One line per finding recorded, else one line saying why there is none."""
    if not report.reached:
        command.stdout.write(
            f"{report.label}: not reached, nothing compared: {report.problem}. The next sync tries again."
        )
        return
    for recorded in report.recorded:
        finding, drift = recorded.finding, recorded.drift
        pinned = ""
        if finding.tool is not None and finding.version is not None:
            pinned = f" (pinned: {finding.tool.name} v{finding.version.number})"
        what = "changed again" if recorded.updated else "new"
        command.stdout.write(
            f"{report.label}: {recorded.tenant}: {drift.upstream_tool}: {finding.get_kind_display()}"
            f"{pinned}: drift finding {finding.pk} ({what})"
        )
    if report.recorded:
        return
    if not report.pinned and not report.listed:
        command.stdout.write(f"{report.label}: no tool is imported from it; nothing to compare.")
        return
    waiting = f"; {report.still_open} open finding(s) await review" if report.still_open else ""
    command.stdout.write(
        f"{report.label}: no new drift ({report.listed} tools listed, {report.pinned} published "
        f"pinned){waiting}."
    )
