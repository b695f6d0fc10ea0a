"""Writes of the imports app for MCP servers: the tools a server lists as draft tool
versions of the `mcp` executor, as openapi_services.py does for OpenAPI operations (one
transaction, the catalog's and tenancy's services writing each tool, draft, publication and
grant with its audit event, and one `mcp.import` event; import_tail.py the tail they share)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from apps.catalog.models import Tool
from apps.catalog.services import tool_save, version_create_draft
from apps.common.jsontext import printable
from apps.tenancy.models import Tenant
from apps.upstreams.models import UpstreamKind
from apps.upstreams.selectors import upstream_get

from .drafts import IMPORTED_FIELDS, Draft
from .errors import ImportRefused, Unsupported
from .import_tail import (
    CHANGED,
    NEW,
    SKIPPED,
    UNCHANGED,
    ImportReport,
    Known,
    OperationResult,
    agents_named,
    content_with,
    settled,
)
from .limits import Clock, ImportLimitExceeded, ImportLimits
from .mcp_tools import EXECUTOR as MCP_EXECUTOR
from .mcp_tools import definition_digest, draft_of_tool, hints_note
from .names import tool_name
from .selectors import mcp_tool_definitions, version_latest


def mcp_import(
    *,
    tenant: Tenant,
    upstream: str,
    actor: str,
    tool_names: Sequence[str] | None = None,
    publish: bool = False,
    grant_agents: Sequence[str] = (),
) -> ImportReport:
    """Import the tools the MCP server `upstream` (the tenant's or the platform's upstream of
    kind `mcp`) lists now, all or `tool_names`: mcp_definitions_import of its `tools/list`.
    Raises ImportRefused with nothing written, also when the server cannot be listed.
    """
    _, definitions = mcp_tool_definitions(tenant=tenant, upstream=upstream)
    return mcp_definitions_import(tenant=tenant, upstream=upstream, definitions=definitions, actor=actor,
                                  tool_names=tool_names, publish=publish, grant_agents=grant_agents)


def mcp_definitions_import(
    *,
    tenant: Tenant,
    upstream: str,
    definitions: Sequence[dict[str, Any]],
    actor: str,
    tool_names: Sequence[str] | None = None,
    publish: bool = False,
    grant_agents: Sequence[str] = (),
) -> ImportReport:
    """Import tool definitions of the MCP server `upstream`, as its `tools/list` lists them,
    all or `tool_names`, into `tenant`'s catalog as drafts of the `mcp` executor, like
    openapi_import: a tool imported before gets a new draft only when its definition
    changed, and each version's `source` keeps the definition and its digest. Writes tools,
    versions, grants, their audit events and one `mcp.import` event (none when nothing
    changed). Raises ImportRefused with nothing written.
    """
    found = upstream_get(tenant_id=tenant.pk, name=upstream)
    if found is None or found.kind != UpstreamKind.MCP:
        raise ImportRefused(f"Tenant {tenant.slug} has no MCP server upstream {upstream!r}.")
    by_name = {str(d["name"]): d for d in definitions}
    unknown = [name for name in tool_names or () if name not in by_name]
    if unknown:
        raise ImportRefused(
            f"{upstream} lists no tool {printable(', '.join(unknown))}; it lists: "
            f"{printable(', '.join(by_name)) or 'none'}."
        )
    wanted = [by_name[name] for name in dict.fromkeys(tool_names)] if tool_names else list(definitions)
    limits = ImportLimits.from_settings()
    if len(wanted) > limits.max_operations:
        raise ImportLimitExceeded(
            upstream, f"{len(wanted)} tools are chosen; an import makes drafts of at most "
            f"{limits.max_operations} (TOOLHUB_IMPORT_MAX_OPERATIONS). Choose fewer (--tools)."
        )
    agents = agents_named(tenant=tenant, names=grant_agents)
    clock = Clock(limits)
    # The names as they can be stored: one with a NUL is kept escaped.
    listed = sorted(printable(name) for name in by_name)
    with transaction.atomic():
        known = Known.of(tenant, upstream, [str(d["name"]) for d in wanted], kind="mcp")
        results = []
        for definition in wanted:
            clock.check(f"{upstream}, tool {printable(str(definition['name']))}")
            results.append(mcp_import_definition(tenant=tenant, definition=definition, upstream=upstream,
                                                 actor=actor, known=known, listed=listed, limits=limits))
        results, granted = settled(tenant, results, agents, actor, clock, publish=publish, by="MCP import",
                                   what="Tool", action="mcp.import", data={"upstream": upstream})
    return ImportReport(upstream=upstream, base_url=found.where,
                        title=f"the tools of {upstream}", results=tuple(results), granted=granted)


def mcp_import_definition(
    *, tenant: Tenant, definition: dict[str, Any], upstream: str, actor: str, why: str = "Re-imported",
    known: Known | None = None, listed: Sequence[str] = (), limits: ImportLimits | None = None,
) -> OperationResult:
    """One listed tool of `upstream` as mcp_import makes it: a new tool and draft, or for a tool
    imported before whose definition changed, a new draft from the tool's latest version with
    only the changed imported fields replaced (the curator's other edits kept), `why` opening
    its changelog. The source keeps the definition, its digest and the names of the tools
    the server `listed` with it (the drift check reports only tools added after those).
    Writes tools, versions and their audit events; a tool ToolHub cannot call (Unsupported)
    is SKIPPED with nothing written."""
    key = str(definition["name"])
    try:
        draft = draft_of_tool(definition, upstream=upstream, limits=limits)
    except Unsupported as exc:
        return OperationResult(key=printable(key), pointer="", outcome=SKIPPED, reason=str(exc))
    source = {"kind": "mcp", "upstream": upstream, "key": key, "digest": definition_digest(definition),
              "tool": definition, **({"listed": list(listed)} if listed else {})}
    known = known or Known.of(tenant, upstream, [key], kind="mcp")
    previous = known.imported.get(key)
    if previous is None:
        named = tool_name(draft.name, key=key, taken=known.taken)
        tool = tool_save(tool=Tool(name=named.name, tenant=tenant, summary=draft.summary), actor=actor)
        version = version_create_draft(
            tool=tool, actor=actor, **draft.fields(), strict=False, executor=MCP_EXECUTOR, source=source,
            changelog=f"Imported from the tool {key} of {upstream}. {hints_note(definition)}",
        )
        return OperationResult(key=key, pointer="", outcome=NEW, tool=tool.name, version=version,
                               note=named.note)
    latest = version_latest(tool=previous.tool)
    if previous.source.get("digest") == source["digest"]:
        return OperationResult(key=key, pointer="", outcome=UNCHANGED, tool=latest.tool.name, version=latest)
    before: Draft | None
    try:
        before = draft_of_tool(previous.source["tool"], upstream=upstream)
        changed = draft.changed_since(before)
    except (KeyError, TypeError, Unsupported):
        before, changed = None, list(IMPORTED_FIELDS)
    content, note = content_with(latest, draft, changed, MCP_EXECUTOR, before=before)
    version = version_create_draft(
        tool=latest.tool, actor=actor, **content, source=source,
        changelog=f"{why} the tool {key} of {upstream}: "
        f"{', '.join(changed) or 'its definition'} changed.{note} {hints_note(definition)}",
    )
    return OperationResult(key=key, pointer="", outcome=CHANGED, tool=latest.tool.name,
                           changed=tuple(changed) or ("definition",), version=version)
