"""Drift checks of MCP servers: list each server's tools and compare them with the definitions
the published versions of its tools were made from (apps/imports/drift.py), recording each
change as a drift finding (apps/catalog, so the gateway can suspend a drifted tool).

Nothing is applied: the pinned versions keep serving. An upstream that cannot be listed
(down, refused by the egress policy, a credential that cannot be read) is reported, never a
finding. `upstreams_claim_due_syncs` picks the upstreams the beat job checks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.catalog.models import DriftFinding, ToolVersion, VersionStatus
from apps.catalog.services import drift_finding_record
from apps.gateway.executors.mcp import ListingFailed, list_mcp_tools
from apps.tenancy.models import Tenant
from apps.upstreams.errors import SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import Upstream, UpstreamKind
from apps.upstreams.selectors import upstream_for_call, upstream_label

from .drift import Drift, Pin, drifts_of

logger = logging.getLogger("toolhub.imports")


@dataclass(frozen=True)
class RecordedDrift:
    tenant: str
    drift: Drift
    finding: DriftFinding
    updated: bool  # an open finding of the same change, changed again


@dataclass(frozen=True)
class SyncReport:
    upstream: Upstream
    reached: bool
    problem: str = ""
    listed: int = 0
    pinned: int = 0
    recorded: tuple[RecordedDrift, ...] = ()
    still_open: int = 0

    @property
    def label(self) -> str:
        return upstream_label_of(self.upstream)


def upstream_label_of(upstream: Upstream) -> str:
    return upstream_label(name=upstream.name, tenant_slug=upstream.tenant.slug if upstream.tenant else None)


def upstreams_to_sync(*, tenant: Tenant | None = None, name: str | None = None) -> QuerySet[Upstream]:
    """The MCP upstreams to check: all, or those `tenant`'s tools may call (its own and the
    platform's), or the one named."""
    upstreams = Upstream.objects.filter(kind=UpstreamKind.MCP).select_related("tenant")
    if tenant is not None:
        upstreams = upstreams.filter(Q(tenant=tenant) | Q(tenant__isnull=True))
    if name is not None:
        upstreams = upstreams.filter(name=name)
    return upstreams.order_by("name", "tenant__slug")


def _imported_versions(upstream: Upstream, tenant_id: int | None) -> QuerySet[ToolVersion]:
    """Versions of tenants' tools made from a tool `upstream` lists: a tenant's upstream is
    that tenant's alone; the platform's may be any tenant's."""
    versions = ToolVersion.objects.filter(
        source__kind="mcp", source__upstream=upstream.name, tool__tenant__isnull=False
    )
    if upstream.tenant_id is not None:
        versions = versions.filter(tool__tenant_id=upstream.tenant_id)
    if tenant_id is not None:
        versions = versions.filter(tool__tenant_id=tenant_id)
    return versions


def _pins(versions: list[ToolVersion]) -> tuple[dict[str, Pin], set[str]]:
    """Per server tool, the newest published version made from it; and every server tool known
    before: some version was made from it, or the server listed it when one was imported (a
    curator saw it then and left it out)."""
    pins: dict[str, Pin] = {}
    known: set[str] = set()
    for version in sorted(versions, key=lambda v: (v.tool_id, -v.number)):
        key = str(version.source.get("key", ""))
        known.add(key)
        listed = version.source.get("listed")
        if isinstance(listed, list):
            known.update(str(name) for name in listed)
        definition = version.source.get("tool")
        if version.status == VersionStatus.PUBLISHED and key not in pins and isinstance(definition, dict):
            pins[key] = Pin(upstream_tool=key, definition=definition, tool_id=version.tool_id,
                            version_id=version.pk)
    return pins, known


def _listing(upstream: Upstream) -> tuple[list[dict[str, Any]] | None, str]:
    try:
        resolved = upstream_for_call(tenant_id=upstream.tenant_id, name=upstream.name, subject="")
        return list_mcp_tools(resolved, tenant_id=upstream.tenant_id), ""
    except (UpstreamNotFound, SubjectCredentialMissing) as error:
        return None, error.message
    except ListingFailed as error:
        return None, str(error)


def upstream_sync(*, upstream: Upstream, actor: str, tenant: Tenant | None = None,
                  now: datetime | None = None) -> SyncReport:
    """Check one MCP upstream for drift (for `tenant`'s tools only, when given).

    Lists the server's tools (through the egress policy) unless no version was made from
    them, compares, and records each drift (catalog's drift_finding_record: a known one adds
    nothing, a changed-again one updates its open finding, each write audited). Sets
    `last_synced_at`. Never raises for an unreachable server: the report says why.
    """
    now = now or timezone.now()
    Upstream.objects.filter(pk=upstream.pk).update(last_synced_at=now)
    imported = _imported_versions(upstream, tenant.pk if tenant else None)
    versions = list(imported.select_related("tool__tenant"))
    if not versions:
        return SyncReport(upstream=upstream, reached=True)
    listed, problem = _listing(upstream)
    if listed is None:
        logger.warning("drift check of upstream %s: not reached: %s", upstream_label_of(upstream), problem)
        return SyncReport(upstream=upstream, reached=False, problem=problem)
    by_owner: dict[Tenant, list[ToolVersion]] = {}
    for version in versions:
        # _imported_versions keeps tenants' tools only.
        by_owner.setdefault(cast(Tenant, version.tool.tenant), []).append(version)
    recorded: list[RecordedDrift] = []
    pinned = 0
    for owner, owned in sorted(by_owner.items(), key=lambda item: item[0].slug):
        pins, known = _pins(owned)
        pinned += len(pins)
        for drift in drifts_of(pins=pins, listed=listed, known=known):
            finding = DriftFinding(
                tenant=owner, upstream=upstream, upstream_tool=drift.upstream_tool, kind=drift.kind,
                tool_id=drift.pin.tool_id if drift.pin else None,
                version_id=drift.pin.version_id if drift.pin else None,
                pinned=drift.pinned, current=drift.current, fingerprint=drift.fingerprint, detected_at=now,
            )
            written = drift_finding_record(finding=finding, actor=actor)
            if written is not None:
                recorded.append(RecordedDrift(tenant=owner.slug, drift=drift, finding=written,
                                              updated=written is not finding))
    still_open = DriftFinding.objects.filter(
        upstream=upstream, tenant__in=list(by_owner), reviewed_at__isnull=True
    ).count()
    return SyncReport(upstream=upstream, reached=True, listed=len(listed), pinned=pinned,
                      recorded=tuple(recorded), still_open=still_open)


def upstreams_claim_due_syncs(*, now: datetime | None = None) -> list[int]:
    """Ids of the MCP upstreams whose drift check is due (never checked, or last checked
    `sync_interval_minutes` ago or more), each claimed by setting `last_synced_at` with a
    conditional UPDATE, so a second beat (or a slow worker) never checks one twice."""
    now = now or timezone.now()
    claimed = []
    for pk, last, interval in Upstream.objects.filter(kind=UpstreamKind.MCP).values_list(
        "pk", "last_synced_at", "sync_interval_minutes"
    ):
        if last is not None and last + timedelta(minutes=interval) > now:
            continue
        unchanged = Q(last_synced_at__isnull=True) if last is None else Q(last_synced_at=last)
        if Upstream.objects.filter(unchanged, pk=pk).update(last_synced_at=now):
            claimed.append(pk)
    return claimed
