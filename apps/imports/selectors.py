"""Reads of the imports app: what an MCP server lists, and which version an operation or
tool was imported into before."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, Subquery
from django.utils.text import Truncator

from apps.catalog.models import Tool, ToolVersion
from apps.catalog.selectors import tools_visible_to_tenant
from apps.common.builtin_tools import BUILTIN_TOOL_NAMES
from apps.common.jsontext import printable, text_hazard
from apps.gateway.outbound import ListingFailed, list_mcp_tools
from apps.tenancy.models import Tenant
from apps.upstreams.errors import SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import UpstreamKind
from apps.upstreams.selectors import upstream_for_call, upstreams_visible

from .errors import ImportRefused, Unsupported
from .limits import ImportLimits
from .mcp_tools import draft_of_tool, hints_note

DESCRIPTION_CHARS = 300


def mcp_tool_definitions(*, tenant: Tenant | None, upstream: str) -> tuple[str, list[dict[str, Any]]]:
    """Where the MCP server `upstream` is (its URL or launcher; the tenant's or the platform's; the platform's
    only for no tenant) and every tool it lists now (`tools/list`, through the egress policy
    with the upstream's credential). Raises ImportRefused saying why it could not be listed."""
    try:
        resolved = upstream_for_call(tenant_id=tenant.pk if tenant else None, name=upstream, subject="")
        return resolved.where, list_mcp_tools(resolved, tenant_id=tenant.pk if tenant else None)
    except UpstreamNotFound:
        raise ImportRefused(_no_such_upstream(tenant, upstream)) from None
    except SubjectCredentialMissing as error:
        owner = f"Tenant {tenant.slug}" if tenant else "The platform"
        raise ImportRefused(f"{owner} cannot list upstream {upstream!r}: {error.message}") from None
    except ListingFailed as error:
        raise ImportRefused(f"The tools of {upstream!r} cannot be listed: {error}.") from None


def _no_such_upstream(tenant: Tenant | None, upstream: str) -> str:
    """For the operator who named it (UpstreamNotFound's own text is for the model)."""
    where = f"in tenant {tenant.slug} or the platform" if tenant else "of the platform"
    known = sorted(
        upstreams_visible(tenant_id=tenant.pk if tenant else None)
        .filter(kind=UpstreamKind.MCP).values_list("name", flat=True)
    )
    return (
        f"No upstream named {upstream!r} {where}; known MCP upstreams: {', '.join(known) or 'none'}. "
        "Name one of them, or add the server first (manage.py add_upstream --kind mcp, or "
        "Upstreams → Add in the admin)."
    )


@dataclass(frozen=True)
class ListedTool:
    """One tool an MCP server lists, as the import page offers it."""

    name: str  # as listed, NUL and lone surrogates escaped
    description: str  # the server's, shortened: data to read, never instructions
    side_effect: str  # suggested from the annotations, for the curator to confirm
    hints: str
    problem: str  # why it cannot be imported, or ""
    imported: ToolVersion | None  # the tenant's latest version made from it, if any


def mcp_tools_offered(
    *, tenant: Tenant | None, upstream: str, definitions: list[dict[str, Any]]
) -> list[ListedTool]:
    """Each listed tool with the side effect its draft would get (or why it cannot be
    imported) and the version of `tenant` imported from it before (none looked up without a
    tenant, nor for a name no version could have been made from)."""
    names = [str(definition["name"]) for definition in definitions]
    storable = [name for name in names if text_hazard(name) is None]
    imported = _mcp_imported_latest(tenant=tenant, upstream=upstream, keys=storable) if tenant else {}
    limits = ImportLimits.from_settings()
    offered = []
    for name, definition in zip(names, definitions, strict=True):
        try:
            side_effect, problem = draft_of_tool(definition, upstream=upstream, limits=limits).side_effect, ""
        except Unsupported as exc:
            side_effect, problem = "", str(exc)
        description = Truncator(printable(str(definition.get("description") or ""))).chars(DESCRIPTION_CHARS)
        offered.append(ListedTool(
            name=printable(name), description=description,
            side_effect=side_effect, hints=hints_note(definition), problem=problem,
            imported=imported.get(name),
        ))
    return offered


def _mcp_imported_latest(*, tenant: Tenant, upstream: str, keys: list[str]) -> dict[str, ToolVersion]:
    """Per server tool of `keys`: version_latest of the tool versions_imported_from finds for it,
    for all of them in two queries rather than two per tool."""
    made_from: dict[str, int] = {}
    for key, tool_id in (
        ToolVersion.objects.filter(
            tool__tenant=tenant, source__kind="mcp", source__upstream=upstream, source__key__in=keys
        )
        .order_by("-created_at", "-pk")
        .values_list("source__key", "tool_id")
    ):
        made_from.setdefault(str(key), tool_id)
    latest = versions_latest(tool_ids=made_from.values())
    return {key: latest[tool_id] for key, tool_id in made_from.items()}


def versions_latest(*, tool_ids: Iterable[int]) -> dict[int, ToolVersion]:
    """version_latest of each tool of `tool_ids`, in one query."""
    # The highest number per tool by a subquery: DISTINCT ON is PostgreSQL's only, and
    # `make run` serves SQLite.
    highest = ToolVersion.objects.filter(tool_id=OuterRef("tool_id")).order_by("-number").values("number")[:1]
    return {
        version.tool_id: version
        for version in ToolVersion.objects.filter(
            tool_id__in=set(tool_ids), number=Subquery(highest)
        ).select_related("tool")
    }


def versions_imported_from(
    *, tenant: Tenant, upstream: str, keys: list[str], kind: str = "openapi"
) -> dict[str, ToolVersion]:
    """For each of `keys` that has one, the tenant's newest version made from that key of
    `upstream` (an operation of its OpenAPI document, or a tool its MCP server lists); in one
    query, whatever the number of keys. A key no version can hold (a NUL, a lone surrogate)
    has none, and is not asked about."""
    keys = [key for key in keys if text_hazard(key) is None]
    newest: dict[str, ToolVersion] = {}
    for version in (
        ToolVersion.objects.filter(
            tool__tenant=tenant, source__kind=kind, source__upstream=upstream, source__key__in=keys
        )
        .select_related("tool")
        .order_by("-created_at", "-pk")
    ):
        newest.setdefault(str(version.source["key"]), version)
    return newest


def version_latest(*, tool: Tool) -> ToolVersion:
    """The tool's highest-numbered version, whatever its status (a tool has one from its
    creation on; ToolVersion.DoesNotExist otherwise)."""
    return ToolVersion.objects.select_related("tool").filter(tool=tool).latest("number")


def tool_names_taken(*, tenant: Tenant) -> set[str]:
    """The names a new tool of the tenant may not take: the tenant's, the shared ones and the
    built-in tools'."""
    return set(tools_visible_to_tenant(tenant=tenant).values_list("name", flat=True)) | BUILTIN_TOOL_NAMES
