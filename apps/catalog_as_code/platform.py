"""The platform's part of the catalog as code: one document of `kind: platform`, so an
installation can be rebuilt from files (the platform's document first, then each tenant's).
Pure: no queries and no writes.

What it holds, and what applying it means:

- `tools`, `toolsets`: the shared catalog, as a tenant's document holds the tenant's (the
  same rules: published versions never change, apply never deletes a tool).
- `upstreams`: the platform's upstreams, as a tenant's document holds the tenant's
  (upstreams.py: never a credential's value).
- `tenants`: by slug, with their name and their agents (never keys: issue them afterwards).
  Never deleted.
- `grants`: the shared tools granted to tenants (or to one agent of a tenant). When present
  it is the whole truth for grants of shared tools: what it does not list is deleted.

Stdio launchers are not part of ToolHub yet, so not of this document either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apps.tenancy.models import Agent, Tenant
from apps.upstreams.models import Upstream

from .checks import DocumentError, Problem, expect, unknown_keys
from .document import (
    FORMAT,
    PLATFORM_KIND,
    check_catalog_sections,
    check_grant,
    check_list,
    tenant_document_checked,
    tools_section,
    yaml_mapping,
)
from .toolsets import toolsets_section
from .upstreams import upstreams_section

PLATFORM_SECTIONS = ("tools", "toolsets", "upstreams", "tenants", "grants")
AGENT_FIELDS = ("description", "active")
GRANT_KEYS = ("tenant", "tool", "agent", "pinned_version")


def platform_grant_key(grant: Mapping[str, Any]) -> tuple[str, str, str]:
    return grant["tenant"], grant["tool"], grant["agent"] or ""


def platform_document(
    *, tools: Iterable[Any], toolsets: Iterable[Any], upstreams: Iterable[Upstream],
    tenants: Iterable[Tenant], agents: Iterable[Agent], grants: Iterable[Any],
) -> dict[str, Any]:
    """The platform's document. Expects shared tools and toolsets prefetched as
    tenant_document does, upstreams with their credential, grants with their tenant, tool,
    agent and pinned version selected."""
    agents_of: dict[int, dict[str, Any]] = {}
    for agent in sorted(agents, key=lambda a: a.name):
        agents_of.setdefault(agent.tenant_id, {})[agent.name] = {
            "description": agent.description, "active": agent.active,
        }
    return {
        "format": FORMAT,
        "kind": PLATFORM_KIND,
        "tools": tools_section(tools),
        "toolsets": toolsets_section(toolsets),
        "upstreams": upstreams_section(upstreams),
        "tenants": {
            tenant.slug: {"name": tenant.name, "active": tenant.active,
                          "agents": agents_of.get(tenant.pk, {})}
            for tenant in sorted(tenants, key=lambda t: t.slug)
        },
        "grants": sorted(
            (
                {
                    "tenant": grant.tenant.slug,
                    "tool": grant.tool.name,
                    "agent": grant.agent.name if grant.agent_id else None,
                    "pinned_version": grant.pinned_version.number if grant.pinned_version_id else None,
                }
                for grant in grants
            ),
            key=platform_grant_key,
        ),
    }


def _check_tenant(raw: Any, path: str, problems: list[Problem]) -> dict[str, Any] | None:
    if not expect(raw, dict, path, "a mapping (a tenant)", problems):
        return None
    unknown_keys(raw, ("name", "active", "agents"), path, problems)
    name, active, agents = raw.get("name") or "", raw.get("active", True), raw.get("agents") or {}
    ok = expect(name, str, f"{path}.name", "text", problems)
    ok &= expect(active, bool, f"{path}.active", "true or false", problems)
    ok &= expect(agents, dict, f"{path}.agents", "a mapping of agent name → agent", problems)
    if not ok:
        return None
    checked = {}
    for agent_name, agent in sorted(agents.items(), key=lambda item: str(item[0])):
        agent_path = f"{path}.agents.{agent_name}"
        agent = agent or {}
        if not expect(agent, dict, agent_path, "a mapping (description, active)", problems):
            continue
        unknown_keys(agent, AGENT_FIELDS, agent_path, problems)
        checked[str(agent_name)] = {"description": agent.get("description") or "",
                                    "active": agent.get("active", True)}
    return {"name": name, "active": active, "agents": checked}


def platform_document_checked(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The platform's parsed document, checked and normalized. Raises DocumentError listing
    every problem with its path."""
    problems: list[Problem] = []
    unknown_keys(raw, ("format", "kind", *PLATFORM_SECTIONS), "", problems)
    document: dict[str, Any] = {"format": FORMAT, "kind": PLATFORM_KIND}
    check_catalog_sections(raw, document, problems)
    if "tenants" in raw and expect(raw["tenants"], dict, "tenants", "a mapping of slug → tenant", problems):
        tenants = {str(n): _check_tenant(e, f"tenants.{n}", problems) for n, e in raw["tenants"].items()}
        document["tenants"] = {n: e for n, e in sorted(tenants.items()) if e is not None}
    if "grants" in raw:
        grants = check_list(raw["grants"], "grants", GRANT_KEYS, problems)
        document["grants"] = [
            g for g in grants
            if expect(g["tenant"], str, f"{g['_path']}.tenant", "a tenant slug", problems)
            and check_grant(g, problems)
        ]
    if problems:
        raise DocumentError(problems)
    return document


def catalog_document_from_yaml(text: str) -> dict[str, Any]:
    """The checked document in `text`: the platform's (`kind: platform`) or a tenant's.
    Raises DocumentError listing every problem with its path."""
    raw = yaml_mapping(text)
    if isinstance(raw, dict) and raw.get("kind") == PLATFORM_KIND:
        return platform_document_checked(raw)
    return tenant_document_checked(raw)
