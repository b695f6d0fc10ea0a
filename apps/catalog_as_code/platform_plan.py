"""A checked platform document (platform.py) → the plan that brings the platform's part of an
installation to it: tenants and their agents first (grants name them), upstreams, then the
shared tools and versions and toolsets as plan.py plans a tenant's, then the grants of shared
tools. Pure: it compares two documents, the file's and the database's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .document import Problem
from .plan import CatalogPlanner
from .platform import AGENT_FIELDS, platform_grant_key
from .steps import Context, Plan, Step


@dataclass(frozen=True)
class TenantSave(Step):
    slug: str = ""
    name: str = ""
    active: bool = True


@dataclass(frozen=True)
class AgentSave(Step):
    tenant: str = ""
    name: str = ""
    description: str = ""
    active: bool = True


@dataclass(frozen=True)
class SharedGrantSave(Step):
    tenant: str = ""
    tool: str = ""
    agent: str | None = None
    pinned_version: int | None = None


@dataclass(frozen=True)
class SharedGrantDelete(Step):
    tenant: str = ""
    tool: str = ""
    agent: str | None = None


def _grantee(slug: str, agent: str | None) -> str:
    return f"{slug}/{agent}" if agent else f"every agent of {slug}"


class _PlatformPlanner(CatalogPlanner):
    def __init__(self, current: Mapping[str, Any]) -> None:
        # The shared tools are the platform's own: no other catalog's names to avoid.
        super().__init__(current, Context(shared_tools={}, agents=frozenset()))
        self.first: list[Step] = []  # tenants, agents, upstreams
        self.grant_steps: list[Step] = []
        self.agents_after: dict[str, set[str]] = {
            slug: set(tenant["agents"]) for slug, tenant in current["tenants"].items()
        }

    def tenants(self, wanted: Mapping[str, Any]) -> None:
        current = self.current["tenants"]
        for slug, tenant in wanted.items():
            path, stored = f"tenants.{slug}", current.get(slug)
            if stored is None or (stored["name"], stored["active"]) != (tenant["name"], tenant["active"]):
                self.first.append(TenantSave(path=path, text=f"{'~' if stored else '+'} tenant {slug}",
                                             slug=slug, name=tenant["name"], active=tenant["active"]))
            stored_agents = stored["agents"] if stored else {}
            self.agents_after.setdefault(slug, set()).update(tenant["agents"])
            for name, agent in tenant["agents"].items():
                before = stored_agents.get(name)
                if before is not None and all(before[k] == agent[k] for k in AGENT_FIELDS):
                    continue
                self.first.append(AgentSave(
                    path=f"{path}.agents.{name}", text=f"{'~' if before else '+'} agent {slug}/{name}",
                    tenant=slug, name=name, description=agent["description"], active=agent["active"],
                ))
            for name in sorted(set(stored_agents) - set(tenant["agents"])):
                self.notes.append(f"{path}.agents.{name}: not in the file; left as it is (apply never "
                                  "deletes agents).")
        for slug in sorted(set(current) - set(wanted)):
            self.notes.append(f"tenants.{slug}: not in the file; left as it is (apply never deletes "
                              "tenants).")

    def shared_grants(self, wanted: list[dict[str, Any]]) -> None:
        current = {platform_grant_key(g): g for g in self.current["grants"]}
        seen: set[tuple[str, str, str]] = set()
        for grant in wanted:
            path, key = grant["_path"], platform_grant_key(grant)
            slug, tool, agent = grant["tenant"], grant["tool"], grant["agent"]
            who = _grantee(slug, agent)
            if key in seen:
                self.problems.append(Problem(path, f"a second grant of {tool} to {who}."))
                continue
            seen.add(key)
            if slug not in self.agents_after:
                self.problems.append(Problem(f"{path}.tenant", f"no tenant {slug!r} here or in `tenants`."))
                continue
            if agent is not None and agent not in self.agents_after[slug]:
                self.problems.append(Problem(
                    f"{path}.agent", f"tenant {slug} has no agent {agent!r}; list it under "
                    f"tenants.{slug}.agents."
                ))
                continue
            if not self.known(tool, f"{path}.tool"):
                continue
            pin = grant["pinned_version"]
            if pin is not None and not self.pinnable(tool, pin, f"{path}.pinned_version"):
                continue
            stored = current.get(key)
            if stored is not None and stored["pinned_version"] == pin:
                continue
            self.grant_steps.append(SharedGrantSave(
                path=path, tools=frozenset({tool}), tenant=slug, tool=tool, agent=agent, pinned_version=pin,
                text=f"{'~' if stored else '+'} grant {tool} to {who}"
                + (f", pinned to v{pin}" if pin else ", latest published version"),
            ))
        for key in sorted(set(current) - seen):
            grant = current[key]
            self.grant_steps.append(SharedGrantDelete(
                path="grants", tenant=grant["tenant"], tool=grant["tool"], agent=grant["agent"],
                text=f"- grant {grant['tool']} to {_grantee(grant['tenant'], grant['agent'])}",
            ))


def plan_platform_document(*, wanted: Mapping[str, Any], current: Mapping[str, Any]) -> Plan:
    """The steps that make the platform's part (`current`, as `platform_document` gives it)
    say what `wanted` says, with what stops them (problems at YAML paths) and notes."""
    planner = _PlatformPlanner(current)
    if "tenants" in wanted:
        planner.tenants(wanted["tenants"])
    if "upstreams" in wanted:
        planner.upstreams(wanted["upstreams"], into=planner.first)
    planner.tools(wanted.get("tools", {}))
    planner.untouched_tools(wanted)
    if "toolsets" in wanted:
        planner.toolsets(wanted["toolsets"])
    if "grants" in wanted:
        planner.shared_grants(wanted["grants"])
    return Plan(
        steps=(*planner.first, *planner.steps, *planner.later, *planner.access, *planner.grant_steps),
        notes=tuple(planner.notes), problems=tuple(planner.problems),
    )
