"""Writes of many tools at once: new tools each with its first draft, and drafts published
together, as an import of a document of hundreds of operations makes them. The same
validation (and lint) as `tool_save`, `version_create_draft` and `version_publish`, in a
bounded number of queries instead of several per tool: lint read every tool beside a draft
again for each one published, which made publishing N drafts cost N²."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.audit.services import audit_record_many
from apps.common.builtin_tools import BUILTIN_TOOL_NAMES
from apps.common.catalog_generation import catalog_changed

from .models import Tool, ToolVersion, VersionStatus
from .selectors import versions_findings
from .services import DRAFT_FIELDS, lint_refusal

# Rows per INSERT: PostgreSQL takes at most 65535 parameters in one statement.
BATCH = 500


def tools_create_with_drafts(*, tenant_id: int, new: Sequence[tuple[str, str, Mapping[str, Any]]],
                             actor: str) -> list[ToolVersion]:
    """For each (name, summary, draft content) of `new`, a tool of the tenant and its draft
    version 1, in that order. Raises ValidationError (naming the tool) for a name taken or
    invalid, or a draft `version_create_draft` would refuse; then nothing is written. Writes
    the tools, the drafts and an audit event for each; invalidates the catalog caches once."""
    if not new:
        return []
    names = [name for name, _, _ in new]
    if twice := sorted(name for name, count in Counter(names).items() if count > 1):
        raise ValidationError(f"Two new tools would be named {', '.join(twice)}.", code="unique")
    tools = [Tool(tenant_id=tenant_id, name=name, summary=summary) for name, summary, _ in new]
    with transaction.atomic():
        _lock_names(names)
        suspects = _names_taken(tenant_id, names) | (set(names) & BUILTIN_TOOL_NAMES)
        for index, tool in enumerate(tools):
            with _naming(tool, index):
                if tool.name in suspects:  # the model's own checks, and messages, where one query found one
                    tool.full_clean()
                else:  # the tenant's key is the caller's: it needs no query
                    tool.clean_fields(exclude=["tenant"])
        Tool.objects.bulk_create(tools, batch_size=BATCH)
        versions = []
        for index, (tool, (_, _, content)) in enumerate(zip(tools, new, strict=True)):
            with _naming(tool, index):
                versions.append(first_draft(tool, content))
        ToolVersion.objects.bulk_create(versions, batch_size=BATCH)
        audit_record_many(
            [(tool, "tool.create", {"name": tool.name}) for tool in tools]
            + [(v, "tool_version.create_draft", {"tool": v.tool.name, "number": 1, "status": v.status})
               for v in versions],
            actor=actor, tenant_id=tenant_id,
        )
        catalog_changed()
    return versions


def versions_publish(*, versions: Sequence[ToolVersion], actor: str, note: str = "") -> None:
    """version_publish of each of `versions` (drafts all), all or none: each definition
    validated again, then all published in one UPDATE and linted together, each against the
    tools beside it (the others of the batch included, as published); a ValidationError
    (params: the index of the version) for a version no longer a draft, an unsound one, or
    one lint finds errors in, and nothing is published. Writes the statuses, `published_at`
    and an audit event for each; invalidates the catalog caches once."""
    if not versions:
        return
    ids = [v.pk for v in versions]
    with transaction.atomic():
        stored = ToolVersion.objects.select_for_update(of=("self",)).select_related("tool").in_bulk(ids)
        for index, version in enumerate(versions):
            current = stored.get(version.pk)
            if current is None or current.status != VersionStatus.DRAFT:
                raise ValidationError(
                    f"Version {version.number} of {version.tool.name} is "
                    f"{current.status if current else 'deleted'}: only drafts can be published.",
                    code="status", params={"index": index},
                )
            with _naming(current.tool, index):
                current.full_clean(exclude=["tool"], validate_unique=False, validate_constraints=False)
        now = timezone.now()
        ToolVersion.objects.filter(pk__in=ids).update(status=VersionStatus.PUBLISHED, published_at=now,
                                                      updated_at=now)
        published = ToolVersion.objects.select_related("tool").in_bulk(ids)
        findings = versions_findings(versions=list(published.values()))
        for index, version_id in enumerate(ids):
            if refusal := lint_refusal(published[version_id], findings[version_id]):
                raise ValidationError(refusal, code="lint", params={"index": index})
        audit_record_many(
            [(v, "tool_version.publish", {"tool": v.tool.name, "number": v.number, "status": v.status,
                                          "from_status": VersionStatus.DRAFT}) for v in published.values()],
            actor=actor, tenant_id=versions[0].tool.tenant_id, note=note,
        )
        catalog_changed()


def first_draft(tool: Tool, content: Mapping[str, Any]) -> ToolVersion:
    """The draft version 1 of a new tool (written or not) with `content`, unsaved, checked as
    `version_create_draft` checks a draft: how a caller of tools_create_with_drafts finds the
    drafts it would refuse before the batch. Raises ValidationError."""
    if unknown := sorted(set(content) - set(DRAFT_FIELDS)):
        raise ValidationError(f"Not fields of a draft: {', '.join(unknown)}.")
    version = ToolVersion(tool=tool, number=1, status=VersionStatus.DRAFT, **content)
    # A new tool's first version: no other version to be unique against.
    version.full_clean(exclude=["tool"], validate_unique=False, validate_constraints=False)
    return version


@contextmanager
def _naming(tool: Tool, index: int) -> Iterator[None]:
    """A ValidationError of the tool at `index` of the new ones, naming it (params: index)."""
    try:
        yield
    except ValidationError as error:
        raise ValidationError(f"{tool.name}: {' '.join(error.messages)}", code="invalid",
                              params={"index": index}) from None


def _lock_names(names: Sequence[str]) -> None:
    """tool_save's name locks (services._lock_name), taken in one query, in one order."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('toolhub.tool:' || n)) "
                           "FROM unnest(%s::text[]) AS n", [sorted(names)])


def _names_taken(tenant_id: int, names: Sequence[str]) -> set[str]:
    """Which of `names` the tenant or the shared catalog already has."""
    return set(Tool.objects.filter(Q(tenant_id=tenant_id) | Q(tenant__isnull=True), name__in=names)
               .values_list("name", flat=True))
