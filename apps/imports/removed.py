"""Operations an API removed from its OpenAPI document: the tools imported from them, listed
by a re-import, and deprecated on request (`--deprecate-removed`, the admin's button) through
the catalog's services, each with its audit event."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from django.db import transaction

from apps.catalog.models import Tool, ToolVersion, VersionStatus
from apps.catalog.services import version_deprecate
from apps.tenancy.models import Tenant


@dataclass(frozen=True)
class RemovedOperation:
    """A tool whose newest imported version came from an operation the document no longer has."""

    key: str
    tool: str
    tool_id: int
    # Numbers of its versions agents can still call (published), or that were just deprecated.
    published: tuple[int, ...] = ()
    deprecated: tuple[int, ...] = ()


def removed_operations(*, tenant: Tenant, upstream: str, keys: Collection[str],
                       only: Collection[str] | None = None) -> list[RemovedOperation]:
    """The tools of `tenant` imported from `upstream`'s document whose operation (the key of
    the tool's newest imported version) is none of `keys` (and, given `only`, one of those),
    in key order; three queries, whatever their number."""
    newest_key: dict[int, str] = {}
    for key, tool_id in (
        ToolVersion.objects.filter(tool__tenant=tenant, source__kind="openapi", source__upstream=upstream)
        .order_by("-created_at", "-pk")
        .values_list("source__key", "tool_id")
    ):
        newest_key.setdefault(tool_id, str(key))
    present = set(keys)
    gone = {tool_id: key for tool_id, key in newest_key.items()
            if key not in present and (only is None or key in only)}
    published: dict[int, list[int]] = {}
    for tool_id, number in ToolVersion.objects.filter(
        tool_id__in=gone, status=VersionStatus.PUBLISHED
    ).order_by("number").values_list("tool_id", "number"):
        published.setdefault(tool_id, []).append(number)
    names = dict(Tool.objects.filter(pk__in=gone).values_list("pk", "name"))
    return sorted(
        (RemovedOperation(key=key, tool=names[tool_id], tool_id=tool_id,
                          published=tuple(published.get(tool_id, ())))
         for tool_id, key in gone.items()),
        key=lambda r: r.key,
    )


def removed_operations_deprecate(*, tenant: Tenant, upstream: str, removed: Collection[str],
                                 actor: str) -> list[RemovedOperation]:
    """Deprecate the published versions of the tools imported from `upstream`'s operations
    `removed` (as an import listed them). Writes each version's status and audit event;
    returns what was deprecated."""
    done = []
    with transaction.atomic():
        for gone in removed_operations(tenant=tenant, upstream=upstream, keys=(), only=removed):
            versions = ToolVersion.objects.select_related("tool").filter(
                tool_id=gone.tool_id, number__in=gone.published
            ).order_by("number")
            for version in versions:
                version_deprecate(
                    version=version, actor=actor,
                    note=f"Its operation {gone.key} is no longer in the OpenAPI document of {upstream}.",
                )
            done.append(RemovedOperation(key=gone.key, tool=gone.tool, tool_id=gone.tool_id,
                                         deprecated=gone.published))
    return done
