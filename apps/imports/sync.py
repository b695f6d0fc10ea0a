"""Drift checks of MCP servers: list each server's tools and compare them with the definitions
the published versions of its tools were made from (apps/imports/drift.py), recording each
change as a drift finding (apps/catalog, so the gateway can suspend a drifted tool).

Nothing is applied: the pinned versions keep serving. An upstream that cannot be listed
(down, refused by the egress policy, a credential that cannot be read) is reported, and where
it suspends drifted tools its published tools are suspended by an incomplete-check finding:
a check that could not look fails closed. `upstreams_claim_due_syncs` picks the upstreams the beat job checks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import DataError
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.catalog.models import DriftFinding, DriftKind, ToolVersion, VersionStatus
from apps.catalog.services import drift_finding_record, drift_findings_close_incomplete
from apps.common.jsontext import printable, printable_value
from apps.gateway.outbound import ListingFailed, list_mcp_tools
from apps.tenancy.models import Tenant
from apps.upstreams.errors import SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import Upstream, UpstreamKind
from apps.upstreams.selectors import upstream_for_call, upstream_label
from apps.upstreams.services import upstream_claim_sync, upstream_mark_synced

from .drift import Drift, Pin, Uncompared, drifts_of
from .mcp_tools import definition_digest

logger = logging.getLogger("toolhub.imports")


@dataclass(frozen=True)
class RecordedDrift:
    tenant: str
    drift: Drift
    finding: DriftFinding
    updated: bool  # an open finding of the same change, changed again


@dataclass(frozen=True)
class NotCompared:
    """A server tool of `tenant` the check could not compare; `suspended` when it was published
    and its upstream suspends drifted tools (an incomplete-check finding is open for it)."""

    tenant: str
    upstream_tool: str
    problem: str
    suspended: bool


@dataclass(frozen=True)
class SyncReport:
    upstream: Upstream
    reached: bool
    problem: str = ""
    listed: int = 0
    pinned: int = 0
    recorded: tuple[RecordedDrift, ...] = ()
    not_compared: tuple[NotCompared, ...] = ()
    still_open: int = 0

    @property
    def suspended(self) -> int:
        return sum(1 for gap in self.not_compared if gap.suspended)

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
    them, compares each tool on its own, and records each drift (catalog's
    drift_finding_record: a known one adds nothing, a changed-again one updates its open
    finding, each write audited), text the database cannot hold escaped. What could not be
    compared (the server not reached, a definition that cannot be read, a finding that could
    not be stored) is reported; where the upstream suspends drifted tools, each published tool
    of it gets an incomplete-check finding, which suspends it until a later check compares it
    (closing the finding) or a curator reviews it. Sets `last_synced_at`. Never raises for
    what the server lists or for an unreachable server: the report says what happened.
    """
    now = now or timezone.now()
    upstream_mark_synced(upstream_id=upstream.pk, at=now)
    imported = _imported_versions(upstream, tenant.pk if tenant else None)
    versions = list(imported.select_related("tool__tenant"))
    if not versions:
        return SyncReport(upstream=upstream, reached=True)
    by_owner: dict[Tenant, list[ToolVersion]] = {}
    for version in versions:
        # _imported_versions keeps tenants' tools only.
        by_owner.setdefault(cast(Tenant, version.tool.tenant), []).append(version)
    owners = sorted(by_owner.items(), key=lambda item: item[0].slug)
    listed, problem = _listing(upstream)
    if listed is None:
        logger.warning("drift check of upstream %s: not reached: %s", upstream_label_of(upstream), problem)
        gaps = [
            _not_compared(upstream, owner, Uncompared(upstream_tool=name, problem=f"not reached: {problem}",
                                                      pin=pin), actor=actor, now=now)
            for owner, owned in owners for name, pin in sorted(_pins(owned)[0].items())
        ]
        return SyncReport(upstream=upstream, reached=False, problem=problem, not_compared=tuple(gaps))
    recorded: list[RecordedDrift] = []
    gaps = []
    pinned = 0
    for owner, owned in owners:
        pins, known = _pins(owned)
        pinned += len(pins)
        comparison = drifts_of(pins=pins, listed=listed, known=known)
        uncompared = list(comparison.uncompared)
        for drift in comparison.drifts:
            written = _record(upstream, owner, drift, actor=actor, now=now)
            if isinstance(written, Uncompared):
                uncompared.append(written)
            elif written is not None:
                recorded.append(written)
        gaps += [_not_compared(upstream, owner, gap, actor=actor, now=now) for gap in _distinct(uncompared)]
        compared = set(pins) - {gap.upstream_tool for gap in uncompared}
        drift_findings_close_incomplete(tenant_id=owner.pk, upstream_id=upstream.pk, upstream_tools=compared,
                                        actor=actor)
    still_open = DriftFinding.objects.filter(
        upstream=upstream, tenant__in=list(by_owner), reviewed_at__isnull=True
    ).count()
    return SyncReport(upstream=upstream, reached=True, listed=len(listed), pinned=pinned,
                      recorded=tuple(recorded), not_compared=tuple(gaps), still_open=still_open)


def _record(upstream: Upstream, owner: Tenant, drift: Drift, *, actor: str,
            now: datetime) -> RecordedDrift | Uncompared | None:
    """The finding of one drift, written on its own: one the database refuses anyway is
    reported as a tool not compared, and the check goes on with the next."""
    finding = DriftFinding(
        tenant=owner, upstream=upstream, upstream_tool=drift.upstream_tool, kind=drift.kind,
        tool_id=drift.pin.tool_id if drift.pin else None,
        version_id=drift.pin.version_id if drift.pin else None,
        pinned=printable_value(drift.pinned), current=printable_value(drift.current),
        fingerprint=drift.fingerprint, detected_at=now,
    )
    try:
        written = drift_finding_record(finding=finding, actor=actor)
    except DataError as error:
        logger.warning("drift check of upstream %s: %s of %s not stored: %s", upstream_label_of(upstream),
                       drift.kind, printable(drift.upstream_tool), type(error).__name__)
        return Uncompared(upstream_tool=drift.upstream_tool, pin=drift.pin,
                          problem=f"its {drift.kind} finding could not be stored ({type(error).__name__})")
    if written is None:
        return None
    return RecordedDrift(tenant=owner.slug, drift=drift, finding=written, updated=written is not finding)


def _distinct(uncompared: list[Uncompared]) -> list[Uncompared]:
    """One per server tool (the first reason), in name order."""
    first: dict[str, Uncompared] = {}
    for gap in uncompared:
        first.setdefault(gap.upstream_tool, gap)
    return [first[name] for name in sorted(first)]


def _not_compared(upstream: Upstream, owner: Tenant, gap: Uncompared, *, actor: str,
                  now: datetime) -> NotCompared:
    """Report a tool not compared; on an upstream that suspends drifted tools, suspend a
    published one with an incomplete-check finding (its own, so reviewing a drift of the tool
    does not resume it while it stays uncompared)."""
    suspend = upstream.suspend_drifted_tools and gap.pin is not None
    if gap.pin is not None and suspend:
        drift_finding_record(
            finding=DriftFinding(
                tenant=owner, upstream=upstream, upstream_tool=printable(gap.upstream_tool),
                kind=DriftKind.INCOMPLETE, tool_id=gap.pin.tool_id, version_id=gap.pin.version_id,
                pinned=gap.pin.definition, current={}, problem=printable(gap.problem),
                fingerprint=definition_digest({"kind": DriftKind.INCOMPLETE, "version": gap.pin.version_id,
                                               "problem": gap.problem}),
                detected_at=now,
            ),
            actor=actor,
        )
    return NotCompared(tenant=owner.slug, upstream_tool=printable(gap.upstream_tool),
                       problem=printable(gap.problem), suspended=suspend)


def upstreams_claim_due_syncs(*, now: datetime | None = None) -> list[int]:
    """Ids of the MCP upstreams whose drift check is due (never checked, or last checked
    `sync_interval_minutes` ago or more), each claimed by setting `last_synced_at` with a
    conditional UPDATE (the upstreams' upstream_claim_sync), so a second beat (or a slow
    worker) never checks one twice."""
    now = now or timezone.now()
    claimed = []
    for pk, last, interval in Upstream.objects.filter(kind=UpstreamKind.MCP).values_list(
        "pk", "last_synced_at", "sync_interval_minutes"
    ):
        if last is not None and last + timedelta(minutes=interval) > now:
            continue
        if upstream_claim_sync(upstream_id=pk, last=last, at=now):
            claimed.append(pk)
    return claimed
