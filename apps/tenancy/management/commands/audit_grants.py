"""`manage.py audit_grants`: the grants of shared tools the platform did not make."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from apps.tenancy.models import Grant
from apps.tenancy.selectors import shared_tool_grants_not_by_platform


def _made_by(grant: Grant) -> str:
    if grant.granted_by_platform is None:
        return f"maker not recorded{f' (last saved by {grant.granted_by})' if grant.granted_by else ''}"
    return f"saved by {grant.granted_by or 'someone unnamed'}, not the platform"


class Command(BaseCommand):
    help = (
        "List every grant of a shared tool that the platform (a superuser, the seed) did not make: "
        "made by a tenant's staff or catalog file, or before ToolHub recorded who grants. Exit "
        "status 1 when there is any: review each, then delete it or have a superuser save it."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        grants = list(shared_tool_grants_not_by_platform())
        for grant in grants:
            who = grant.agent.name if grant.agent is not None else "all agents"
            self.stdout.write(
                f"{grant.tenant.slug}: {who} → {grant.tool.name} (grant {grant.pk}, "
                f"{grant.updated_at:%Y-%m-%d %H:%M} UTC): {_made_by(grant)}"
            )
        if grants:
            self.stderr.write(
                f"{len(grants)} grant(s) of shared tools not made by the platform. Only the platform "
                "grants shared tools: delete each one it does not want (Tenancy → Grants), or have a "
                "superuser save it to keep it."
            )
            raise SystemExit(1)
        self.stderr.write("Every grant of a shared tool was made by the platform.")
