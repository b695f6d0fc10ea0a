"""Adopting a drift a curator reviewed: a new draft of the tool from the definition the MCP
server lists now, made as `import_mcp` makes it, and the finding closed; when there is
nothing new to draft, the finding stays open.

The draft is only a draft: a curator reviews and publishes it like any other, and until then
the pinned version keeps serving.
"""

from __future__ import annotations

from typing import cast

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.audit.services import audit_record
from apps.catalog.models import DriftFinding, DriftKind, ToolVersion
from apps.catalog.services import drift_finding_review

from .errors import ImportRefused
from .import_tail import SKIPPED, UNCHANGED, OperationResult
from .mcp_services import mcp_import_definition
from .mcp_tools import definition_digest


def drift_finding_new_draft(*, finding: DriftFinding, actor: str) -> OperationResult:
    """A new draft from `finding`'s current definition (a new tool for an added one), keeping
    the curator's edits of the latest version where import_mcp keeps them. Reviews the
    finding and the tenant's other open findings of the same server tool that the draft
    covers (same current definition). Writes the tool and version, the reviews and a
    `drift_finding.new_draft` audit event in one transaction. Raises ImportRefused (a removed
    tool, a finding reviewed already, a definition ToolHub cannot call, a version made from
    that definition already) with nothing written."""
    if finding.kind == DriftKind.REMOVED:
        raise ImportRefused(
            f"{finding.upstream.name} no longer lists {finding.upstream_tool}: there is no definition "
            "to draft from. Mark the finding reviewed, and retire the tool if it should go."
        )
    if finding.kind == DriftKind.INCOMPLETE:
        raise ImportRefused(
            f"The check of {finding.upstream.name} could not compare {finding.upstream_tool} "
            f"({finding.problem}): there is no definition to draft from. The next check that compares it "
            "closes this finding; mark it reviewed to let the tool answer before that."
        )
    if not finding.is_open:
        raise ImportRefused(f"This finding was reviewed already by {finding.reviewed_by}; nothing was done.")
    digest = definition_digest(finding.current)
    with transaction.atomic():
        result = mcp_import_definition(
            tenant=finding.tenant, definition=finding.current, upstream=finding.upstream.name, actor=actor,
            why="Adopted the reviewed change of",
        )
        if result.outcome == SKIPPED:
            raise ImportRefused(f"{finding.upstream_tool} cannot be drafted: {result.reason}")
        version = cast(ToolVersion, result.version)  # every outcome but SKIPPED names its version
        if result.outcome == UNCHANGED:
            # Closing the finding now would hide the change behind a draft nobody made here.
            raise ImportRefused(
                f"A version was made from what {finding.upstream.name} lists now already (import_mcp makes "
                f"one too); the latest is {version.tool.name} v{version.number} ({version.status}). The "
                "finding stays open: review and publish that draft, or mark the finding reviewed."
            )
        note = f"Adopted in {version.tool.name} v{version.number} ({version.status})."
        covered = DriftFinding.objects.for_tenant(finding.tenant_id).filter(
            upstream=finding.upstream, upstream_tool=finding.upstream_tool, reviewed_at__isnull=True
        ).exclude(kind__in=(DriftKind.REMOVED, DriftKind.INCOMPLETE))
        for other in covered:
            if other.pk == finding.pk or definition_digest(other.current) == digest:
                try:
                    drift_finding_review(finding=other, actor=actor, note=note)
                except ValidationError as error:
                    raise ImportRefused(" ".join(error.messages)) from None
        audit_record(
            tenant_id=finding.tenant_id, actor=actor, action="drift_finding.new_draft", target=finding,
            data={"upstream": finding.upstream.name, "upstream_tool": finding.upstream_tool,
                  "tool": version.tool.name, "version": version.number, "outcome": result.outcome},
        )
    finding.refresh_from_db()
    return result
