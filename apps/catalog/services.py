"""Writes of the catalog app: tool versions through their life cycle, tools, toolsets
(grants are tenancy's) and drift findings. Each writes its audit event in its own
transaction and, when agents could see the change, bumps the catalog generation once
committed (apps/common/catalog_generation.py)."""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from apps.audit.services import audit_record, audited_save
from apps.common.catalog_generation import catalog_changed

from .lint import Finding
from .models import DriftFinding, DriftKind, Tool, Toolset, ToolsetPhase, ToolVersion, VersionStatus
from .search_text import search_document
from .selectors import version_findings

# What a curator writes in a draft; number, status and timestamps are the services' job.
DRAFT_FIELDS = tuple(f for f in ToolVersion.CONTENT_FIELDS if f not in ("tool_id", "number")) + (
    "changelog",
)


def _version_data(version: ToolVersion) -> dict[str, Any]:
    return {"tool": version.tool.name, "number": version.number, "status": version.status}


def _next_number(tool: Tool) -> int:
    # The tool row lock serializes drafts of one tool, so two curators never race to a number.
    Tool.objects.select_for_update().filter(pk=tool.pk).first()
    latest = ToolVersion.objects.filter(tool=tool).aggregate(m=Max("number"))["m"]
    return (latest or 0) + 1


def version_save_draft(*, version: ToolVersion, actor: str, note: str = "") -> ToolVersion:
    """Create a draft (numbered max + 1) or save changes to an existing draft.

    Validates every field and the definition (ValidationError, by field); refuses a version
    that is no longer a draft. Writes the version and an audit event.
    """
    creating = version.pk is None
    with transaction.atomic():
        if creating:
            version.number = _next_number(version.tool)
            version.status = VersionStatus.DRAFT
        elif not ToolVersion.objects.filter(pk=version.pk, status=VersionStatus.DRAFT).exists():
            raise ValidationError(
                f"Version {version.number} of {version.tool.name} is no longer a draft, so it "
                "cannot be edited. Create a new draft from it instead.",
                code="immutable",
            )
        audited_save(
            version, tenant_id=version.tool.tenant_id, actor=actor,
            action="tool_version.create_draft" if creating else "tool_version.edit_draft",
            note=note, data=_version_data(version),
        )
    return version


def version_create_draft(*, tool: Tool, actor: str, **content: Any) -> ToolVersion:
    """A new draft of `tool` with the given content fields (see DRAFT_FIELDS), numbered
    max + 1. Raises ValidationError for unknown fields or an unsound definition."""
    unknown = sorted(set(content) - set(DRAFT_FIELDS))
    if unknown:
        raise ValidationError(
            f"Not fields of a draft: {', '.join(unknown)}. Allowed: {', '.join(DRAFT_FIELDS)}."
        )
    return version_save_draft(version=ToolVersion(tool=tool, **content), actor=actor)


def version_create_draft_from(*, version: ToolVersion, actor: str) -> ToolVersion:
    """A new draft (numbered max + 1) with every content field of `version`, whatever its
    status: the way to change a published contract. Writes the draft and an audit event."""
    content = {
        field: copy.deepcopy(getattr(version, field))
        for field in ToolVersion.CONTENT_FIELDS
        if field not in ("tool_id", "number")
    }
    return version_save_draft(
        version=ToolVersion(tool=version.tool, **content), actor=actor,
        note=f"Copied from version {version.number} ({version.status}).",
    )


def version_delete_draft(*, version: ToolVersion, actor: str) -> None:
    """Discard a draft; versions that left draft are kept forever (ValidationError)."""
    with transaction.atomic():
        audit_record(
            tenant_id=version.tool.tenant_id, actor=actor, action="tool_version.delete_draft",
            target=version, data=_version_data(version),
        )
        deleted, _ = ToolVersion.objects.filter(pk=version.pk, status=VersionStatus.DRAFT).delete()
        if not deleted:
            raise ValidationError(
                f"Version {version.number} of {version.tool.name} is not a draft; only drafts can be "
                "deleted. Retire it instead.",
                code="status",
            )


# target status → (the statuses it may be reached from, its audit verb, what to tell a curator)
_TRANSITIONS: dict[str, tuple[frozenset[str], str, str]] = {
    VersionStatus.PUBLISHED: (
        frozenset({VersionStatus.DRAFT}), "publish", "only drafts can be published",
    ),
    VersionStatus.DEPRECATED: (
        frozenset({VersionStatus.PUBLISHED}), "deprecate", "only published versions can be deprecated",
    ),
    VersionStatus.RETIRED: (
        frozenset({VersionStatus.PUBLISHED, VersionStatus.DEPRECATED}), "retire",
        "only published or deprecated versions can be retired",
    ),
}


def _version_transition(
    *, version: ToolVersion, to: VersionStatus, actor: str, note: str = "", **changes: Any
) -> ToolVersion:
    """Move a version to `to` with a conditional UPDATE on the status it was read with, so
    of two curators acting at once exactly one succeeds and the other gets a clear error."""
    sources, verb, rule = _TRANSITIONS[to]
    tool = version.tool
    current = ToolVersion.objects.filter(pk=version.pk).values_list("status", flat=True).first()
    if current not in sources:
        raise ValidationError(
            f"Version {version.number} of {tool.name} is {current or 'deleted'}: {rule}.", code="status"
        )
    with transaction.atomic():
        updated = ToolVersion.objects.filter(pk=version.pk, status=current).update(
            status=to, updated_at=timezone.now(), **changes
        )
        if not updated:
            raise ValidationError(
                f"Version {version.number} of {tool.name} was changed by someone else just now; "
                "reload the page to see its status.",
                code="conflict",
            )
        version.refresh_from_db()
        audit_record(
            tenant_id=tool.tenant_id, actor=actor, action=f"tool_version.{verb}",
            target=version, note=note, data={**_version_data(version), "from_status": current},
        )
        catalog_changed()
    return version


def version_publish(*, version: ToolVersion, actor: str, note: str = "") -> ToolVersion:
    """Draft → published: the version becomes callable and never changes again.

    Re-validates a draft's definition first (ValidationError by field) and refuses it while
    lint finds errors in it (apps/catalog/lint/); refuses non-drafts.
    Writes the status, `published_at` and an audit event; invalidates the catalog caches
    once committed.
    """
    stored = ToolVersion.objects.select_related("tool").filter(pk=version.pk).first()
    if stored is not None and stored.status == VersionStatus.DRAFT:
        stored.full_clean()
        _refuse_lint_errors(stored)
    return _version_transition(
        version=version, to=VersionStatus.PUBLISHED, actor=actor, note=note, published_at=timezone.now()
    )


def _refuse_lint_errors(version: ToolVersion) -> None:
    if refusal := lint_refusal(version, version_findings(version=version)):
        raise ValidationError(refusal, code="lint")


def lint_refusal(version: ToolVersion, findings: Collection[Finding]) -> str:
    """Why `version` cannot be published for lint's errors among `findings`, or ""."""
    errors = [f for f in findings if f.is_error]
    if not errors:
        return ""
    listed = " ".join(f"{f.field}: {f.fix}" for f in errors)
    return (
        f"{version.tool.name} v{version.number} cannot be published: lint found "
        f"{len(errors)} error{'s' if len(errors) > 1 else ''}. {listed} "
        "Fix the draft and publish again."
    )


def version_deprecate(*, version: ToolVersion, actor: str, note: str = "") -> ToolVersion:
    """Published → deprecated, on the way to retirement. Writes the status and an audit
    event; invalidates the catalog caches once committed."""
    return _version_transition(version=version, to=VersionStatus.DEPRECATED, actor=actor, note=note)


def version_retire(*, version: ToolVersion, actor: str, note: str = "") -> ToolVersion:
    """Published or deprecated → retired, for good. Writes the status and an audit event;
    invalidates the catalog caches once committed."""
    return _version_transition(version=version, to=VersionStatus.RETIRED, actor=actor, note=note)


def _lock_name(kind: str, name: str) -> None:
    """Serialize saves of one name until commit: whether a tenant's name clashes with a shared
    one spans rows no unique index covers, so two curators must not check it at once."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"toolhub.{kind}:{name}"])


def tool_save(*, tool: Tool, actor: str) -> Tool:
    """Create or update a tool (name, owner, summary, replacement). Validates (ValidationError:
    a name its tenant or the shared catalog already has, or a tenant's name shadowing a shared
    tool or the reverse), writes it and an audit event; invalidates the catalog caches once
    committed."""
    creating = tool.pk is None
    with transaction.atomic():
        _lock_name("tool", tool.name)
        audited_save(
            tool, tenant_id=tool.tenant_id, actor=actor, action="tool.create" if creating else "tool.update",
            data={"name": tool.name},
        )
        if not creating:
            _refresh_search_documents(tool)
        catalog_changed()
    return tool


def _refresh_search_documents(tool: Tool) -> None:
    """A renamed tool is searched by its new name: its versions' search documents follow (they
    are derived, not content, so a published version's may change)."""
    for pk, description, parameters, stored in tool.versions.values_list(
        "pk", "description", "parameters", "search_document"
    ):
        document = search_document(name=tool.name, description=description, parameters=parameters)
        if document != stored:
            ToolVersion.objects.filter(pk=pk).update(search_document=document)


def tool_delete(*, tool: Tool, actor: str) -> None:
    """Delete a tool that has no versions (ProtectedError otherwise); its grants go with it."""
    with transaction.atomic():
        audit_record(tenant_id=tool.tenant_id, actor=actor, action="tool.delete", target=tool,
                     data={"name": tool.name})
        tool.delete()
        catalog_changed()


def toolset_changed(*, toolset: Toolset, actor: str, action: str) -> None:
    """Record that a toolset or its phases were saved or deleted (by the admin's forms):
    an audit event, and the catalog caches invalidated once committed."""
    with transaction.atomic():
        audit_record(actor=actor, action=f"toolset.{action}", target=toolset,
                     data={"name": toolset.name})
        catalog_changed()


def toolset_save(
    *, toolset: Toolset, tools: Iterable[Tool], phases: Mapping[str, Iterable[Tool]], actor: str,
    gates: Collection[str] | None = None,
) -> Toolset:
    """Create or update a toolset holding exactly `tools`, with exactly these phases (phase
    name → its tools; a phase not named is deleted). `gates` names the phases that gate (the
    others only prune); None leaves each phase as it is (a new one only prunes). Validates
    (ValidationError: a name clash as for tools, another tenant's tool, any tenant's in a
    shared toolset, a bad phase name), writes the toolset, its phases and an audit event;
    invalidates the catalog caches once committed."""
    creating = toolset.pk is None
    members = list(tools)
    phase_members = {name: list(phase_tools) for name, phase_tools in phases.items()}
    toolset.refuse_foreign_tools([*members, *(t for ts in phase_members.values() for t in ts)])
    with transaction.atomic():
        _lock_name("toolset", toolset.name)
        toolset.full_clean()
        toolset.save()
        toolset.tools.set(members)
        toolset.phases.exclude(name__in=phase_members).delete()
        for name, phase_tools in sorted(phase_members.items()):
            phase = toolset.phases.filter(name=name).first() or ToolsetPhase(toolset=toolset, name=name)
            if gates is not None:
                phase.gates = name in gates
            phase.full_clean()
            phase.save()
            phase.tools.set(phase_tools)
        audit_record(
            tenant_id=toolset.tenant_id, actor=actor,
            action="toolset.create" if creating else "toolset.update", target=toolset,
            data={"name": toolset.name, "tools": sorted(t.name for t in members),
                  "phases": {name: sorted(t.name for t in ts) for name, ts in phase_members.items()},
                  "gates": sorted(toolset.phases.filter(gates=True).values_list("name", flat=True))},
        )
        catalog_changed()
    return toolset


def toolset_delete(*, toolset: Toolset, actor: str) -> None:
    """Delete a toolset and its phases (its tools stay), with an audit event; invalidates the
    catalog caches once committed."""
    with transaction.atomic():
        audit_record(tenant_id=toolset.tenant_id, actor=actor, action="toolset.delete", target=toolset,
                     data={"name": toolset.name})
        toolset.delete()
        catalog_changed()


def _finding_data(finding: DriftFinding) -> dict[str, Any]:
    return {"upstream": finding.upstream.name, "upstream_tool": finding.upstream_tool, "kind": finding.kind,
            "tool": finding.tool.name if finding.tool is not None else None,
            "version": finding.version.number if finding.version is not None else None}


def drift_finding_record(*, finding: DriftFinding, actor: str) -> DriftFinding | None:
    """Record one drift an upstream sync found (`finding`, not saved yet), unless it is known.

    Known: a finding of the same tenant, upstream tool and kind with the same fingerprint,
    open or reviewed (a drift a curator reviewed and kept is not raised again). An open one
    of the same change with another fingerprint (the server changed it again) is updated;
    otherwise `finding` is saved. Writes the finding and an audit event (`drift_finding.detect`
    or `.update`) and invalidates the catalog caches (an open finding may suspend the tool);
    returns the finding written, None when it was known. An incomplete check is known only
    while its finding is open: one a curator reviewed does not keep an uncompared tool serving
    the next time the check cannot compare it.
    """
    same_change = DriftFinding.objects.for_tenant(finding.tenant_id).filter(
        upstream=finding.upstream, upstream_tool=finding.upstream_tool, kind=finding.kind
    )
    known = same_change.filter(fingerprint=finding.fingerprint)
    if finding.kind == DriftKind.INCOMPLETE:
        known = known.filter(reviewed_at__isnull=True)
    with transaction.atomic():
        if known.exists():
            return None
        still_open = same_change.select_for_update().filter(reviewed_at__isnull=True).first()
        if still_open is not None:
            for field in ("tool", "version", "pinned", "current", "problem", "fingerprint", "detected_at"):
                setattr(still_open, field, getattr(finding, field))
            written, action = still_open, "drift_finding.update"
        else:
            written, action = finding, "drift_finding.detect"
        try:
            with transaction.atomic():
                written.save()
        except IntegrityError:  # a concurrent sync recorded the same change first
            return None
        audit_record(tenant_id=written.tenant_id, actor=actor, action=action, target=written,
                     data=_finding_data(written))
        catalog_changed()
    return written


def drift_findings_close_incomplete(
    *, tenant_id: int, upstream_id: int, upstream_tools: Collection[str], actor: str
) -> int:
    """Close the open incomplete-check findings of `upstream_tools` of `upstream_id`, which a
    later check has now compared (what it found, if anything, is a finding of its own). Writes
    each review and a `drift_finding.review` audit event; invalidates the catalog caches.
    Returns how many were closed."""
    with transaction.atomic():
        closing = list(
            DriftFinding.objects.for_tenant(tenant_id).select_for_update(of=("self",)).filter(
                upstream_id=upstream_id, upstream_tool__in=list(upstream_tools), kind=DriftKind.INCOMPLETE,
                reviewed_at__isnull=True,
            ).select_related("upstream", "tool", "version")
        )
        note = "A later check compared the tool."
        for finding in closing:
            finding.reviewed_at, finding.reviewed_by, finding.review_note = timezone.now(), actor, note
            finding.save(update_fields=["reviewed_at", "reviewed_by", "review_note", "updated_at"])
            audit_record(tenant_id=tenant_id, actor=actor, action="drift_finding.review", target=finding,
                         note=note, data=_finding_data(finding))
        if closing:
            catalog_changed()
    return len(closing)


def drift_finding_review(*, finding: DriftFinding, actor: str, note: str = "") -> DriftFinding:
    """Close an open finding: the pinned version stays what agents see, and calls suspended by
    it resume. Raises ValidationError when it was reviewed already (by someone else just now,
    say). Writes the review and an audit event; invalidates the catalog caches."""
    with transaction.atomic():
        reviewed = DriftFinding.objects.filter(pk=finding.pk, reviewed_at__isnull=True).update(
            reviewed_at=timezone.now(), reviewed_by=actor, review_note=note, updated_at=timezone.now()
        )
        finding.refresh_from_db()
        if not reviewed:
            raise ValidationError(
                f"This finding was already reviewed by {finding.reviewed_by} at "
                f"{finding.reviewed_at:%Y-%m-%d %H:%M} UTC; nothing was changed.", code="reviewed",
            )
        audit_record(tenant_id=finding.tenant_id, actor=actor, action="drift_finding.review", target=finding,
                     note=note, data=_finding_data(finding))
        catalog_changed()
    return finding
