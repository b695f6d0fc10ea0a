"""A checked catalog document (document.py) → the plan that brings a tenant's
catalog to it: the service calls in order (tools and versions first, then tool
replacements, toolsets, grants and policies), notes, and the problems that stop it, each
at its YAML path (the steps: steps.py). Pure: it compares two documents, the file's and
the database's.

A version is matched by number. A draft whose definition differs is edited; a published
(deprecated, retired) one never changes, so its changed definition becomes a new draft,
unless a later version already holds exactly that definition (what the previous apply of
the same file made): that is how a second apply changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .document import POLICY_FIELDS, PROMISE_FIELDS, VERSION_FIELDS, Problem, grant_key, policy_default
from .steps import (
    Context,
    DraftCreate,
    DraftEdit,
    GrantDelete,
    GrantSave,
    Plan,
    PolicyDelete,
    PolicySave,
    StatusChange,
    Step,
    ToolCreate,
    ToolsetDelete,
    ToolsetSave,
    ToolUpdate,
    UpstreamSave,
)
from .toolsets import phase_gates, phase_tools
from .upstreams import UPSTREAM_FIELDS

# from → to: the status changes that take us there, in order
_STATUS_ROUTES: dict[tuple[str, str], tuple[str, ...]] = {
    ("draft", "published"): ("published",),
    ("draft", "deprecated"): ("published", "deprecated"),
    ("draft", "retired"): ("published", "retired"),
    ("published", "deprecated"): ("deprecated",),
    ("published", "retired"): ("retired",),
    ("deprecated", "retired"): ("retired",),
}
_VERBS = {"published": "publish", "deprecated": "deprecate", "retired": "retire"}


def _promise(entry: Mapping[str, Any]) -> str:
    return json.dumps({f: entry[f] for f in PROMISE_FIELDS}, sort_keys=True)


def _content(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {f: entry[f] for f in VERSION_FIELDS}


def _gating_changes(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> str:
    """Which phases of a saved toolset start or stop gating, for the plan's line."""
    before = stored["phases"] if stored else {}
    changes = [
        f"phase {phase} {'gates' if phase_gates(entry) else 'only prunes'}"
        for phase, entry in wanted["phases"].items() if phase_gates(entry) != phase_gates(before.get(phase))
    ]
    return f": {', '.join(changes)}" if changes else ""


def _policy_limits(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every limit of a policy (None: one not there yet), the defaults an export leaves out
    filled in."""
    return {name: (entry or {}).get(name, policy_default(name)) for name in POLICY_FIELDS}


def _limit_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """`: open_on_request true → false, …`: the limits a policy's save changes, for the plan."""
    changes = [
        name if name == "rule_overrides" else f"{name} {json.dumps(before[name])} → {json.dumps(after[name])}"
        for name in POLICY_FIELDS if before[name] != after[name]
    ]
    return f": {', '.join(changes)}" if changes else ""


class CatalogPlanner:
    """Plans one catalog's tools, versions, toolsets, grants and policies: a tenant's, or the
    shared one (platform_plan.py)."""

    def __init__(self, current: Mapping[str, Any], context: Context) -> None:
        self.current = current
        self.context = context
        self.steps: list[Step] = []  # tools and versions
        self.later: list[Step] = []  # tool updates, once every tool they name exists
        self.access: list[Step] = []  # toolsets, grants, policies
        self.notes: list[str] = []
        self.problems: list[Problem] = []
        # tool name → {version number: status} once the plan is carried out
        self.versions_after: dict[str, dict[int, str]] = {
            name: {v["number"]: v["status"] for v in tool["versions"]}
            for name, tool in current["tools"].items()
        }
        self.own_tools: set[str] = set(current["tools"])

    def known(self, name: Any, path: str) -> bool:
        if name in self.own_tools or name in self.context.shared_tools:
            return True
        self.problems.append(Problem(
            path, f"no tool named {name!r} among this tenant's and the shared ones (another "
            "tenant's tools cannot be used).",
        ))
        return False

    def tools(self, wanted: Mapping[str, Any]) -> None:
        self.own_tools |= set(wanted)
        for name, tool in wanted.items():
            path = f"tools.{name}"
            if name in self.context.shared_tools:
                self.problems.append(Problem(
                    path, f"the shared catalog has a tool named {name}, which this tenant's agents "
                    "see; a tenant's tool cannot take its name. Rename it, or drop it and use the shared "
                    "one.",
                ))
                continue
            current = self.current["tools"].get(name)
            if current is None:
                self.steps.append(
                    ToolCreate(path=path, text=f"+ tool {name}", name=name, summary=tool["summary"])
                )
            if tool["replaced_by"] is not None and not self.known(tool["replaced_by"], f"{path}.replaced_by"):
                continue
            before = current or {"summary": tool["summary"], "replaced_by": None}
            changes = []
            if before["summary"] != tool["summary"]:
                changes.append("summary")
            if before["replaced_by"] != tool["replaced_by"]:
                changes.append(f"replaced by {tool['replaced_by'] or 'nothing'}")
            if changes:
                self.later.append(ToolUpdate(
                    path=path, text=f"~ tool {name}: {', '.join(changes)}",
                    tools=frozenset({name, tool["replaced_by"]} - {None}),
                    name=name, summary=tool["summary"], replaced_by=tool["replaced_by"],
                ))
            self.versions(name, tool["versions"], current["versions"] if current else [])

    def versions(self, tool: str, wanted: list[dict[str, Any]], stored_list: list[dict[str, Any]]) -> None:
        stored = {v["number"]: v for v in stored_list}
        next_number = max(stored, default=0) + 1
        claimed: set[int] = set()
        needs = frozenset({tool})
        for i, entry in enumerate(wanted):
            path, number = f"tools.{tool}.versions[{i}]", entry["number"]
            match = stored.get(number)
            if match is not None and match["status"] != "draft" and _promise(match) != _promise(entry):
                # A frozen version never changes: is this definition already a later version?
                match = next(
                    (v for n, v in sorted(stored.items())
                     if n > number and n not in claimed and _promise(v) == _promise(entry)),
                    None,
                )
            if match is None:
                if number in stored:
                    frozen = stored[number]["status"]
                    why = f" with the file's v{number} (v{number} is {frozen} and never changes)"
                else:
                    why = "" if number == next_number else f" (the file's v{number})"
                self.steps.append(DraftCreate(
                    path=path, tools=needs, tool=tool, number=next_number, content=_content(entry),
                    text=f"+ {tool} v{next_number}: new draft{why}",
                ))
                self.status(path, tool, next_number, "draft", entry["status"])
                next_number += 1
                continue
            claimed.add(match["number"])
            if _content(match) != _content(entry):
                if match["status"] == "draft":
                    self.steps.append(DraftEdit(
                        path=path, tools=needs, tool=tool, number=match["number"], content=_content(entry),
                        text=f"~ {tool} v{match['number']}: edit the draft",
                    ))
                else:
                    self.notes.append(
                        f"{path}: {tool} v{match['number']} is {match['status']}; its changelog is kept "
                        "as stored."
                    )
            self.status(path, tool, match["number"], match["status"], entry["status"])

    def status(self, path: str, tool: str, number: int, now: str, wanted: str) -> None:
        self.versions_after.setdefault(tool, {})[number] = wanted
        if now == wanted:
            return
        route = _STATUS_ROUTES.get((now, wanted))
        if route is None:
            self.problems.append(Problem(
                f"{path}.status", f"{tool} v{number} is {now} and cannot become {wanted}"
                + ("; publish a new version instead." if wanted == "published" else "."),
            ))
            return
        for to in route:
            self.steps.append(StatusChange(
                path=path, tools=frozenset({tool}), tool=tool, number=number, to=to,
                text=f"> {tool} v{number}: {_VERBS[to]}",
            ))

    def upstreams(self, wanted: Mapping[str, Any], *, into: list[Step]) -> None:
        current = self.current["upstreams"]
        for name, upstream in wanted.items():
            stored = current.get(name)
            if stored == upstream:
                continue
            credential = upstream["credential"]
            text = f"{'~' if stored else '+'} upstream {name}"
            if credential is not None and (stored is None or stored["credential"] != credential):
                text += f" (credential {credential['name']}: its value is never in a file)"
            into.append(UpstreamSave(
                path=f"upstreams.{name}", text=text, name=name,
                settings={k: upstream[k] for k in UPSTREAM_FIELDS}, credential=credential,
                launcher=upstream.get("launcher"), launcher_args=tuple(upstream.get("launcher_args", ())),
            ))
        for name in sorted(set(current) - set(wanted)):
            self.notes.append(f"upstreams.{name}: not in the file; left as it is (apply never deletes "
                              "upstreams).")

    def untouched_tools(self, wanted: Mapping[str, Any]) -> None:
        for name in sorted(set(self.current["tools"]) - set(wanted.get("tools", self.current["tools"]))):
            self.notes.append(f"tools.{name}: not in the file; left as it is (apply never deletes tools).")

    def toolsets(self, wanted: Mapping[str, Any]) -> None:
        current = self.current["toolsets"]
        for name in sorted(set(current) - set(wanted)):
            self.access.append(ToolsetDelete(path=f"toolsets.{name}", text=f"- toolset {name}", name=name))
        for name, toolset in wanted.items():
            path = f"toolsets.{name}"
            phases = toolset["phases"]
            members = [(f"{path}.tools", toolset["tools"])] + [
                (f"{path}.phases.{phase}" + (".tools" if phase_gates(entry) else ""), phase_tools(entry))
                for phase, entry in phases.items()
            ]
            if not all([self.known(n, where) for where, names in members for n in names]):
                continue
            stored = current.get(name)
            if stored == toolset:
                continue
            self.access.append(ToolsetSave(
                path=path, text=f"{'~' if stored else '+'} toolset {name}{_gating_changes(stored, toolset)}",
                tools=frozenset(n for _, names in members for n in names),
                name=name, description=toolset["description"], members=tuple(toolset["tools"]),
                phases={phase: tuple(phase_tools(entry)) for phase, entry in phases.items()},
                gates=frozenset(phase for phase, entry in phases.items() if phase_gates(entry)),
            ))

    def grants(self, wanted: list[dict[str, Any]]) -> None:
        current = {grant_key(g): g for g in self.current["grants"]}
        seen: set[tuple[str, str]] = set()
        for grant in wanted:
            path, key = grant["_path"], grant_key(grant)
            who = grant["agent"] or "every agent"
            if key in seen:
                self.problems.append(Problem(path, f"a second grant of {grant['tool']} to {who}."))
                continue
            seen.add(key)
            if not self.known(grant["tool"], f"{path}.tool"):
                continue
            if grant["tool"] in self.context.shared_tools:
                self.problems.append(Problem(
                    f"{path}.tool", f"{grant['tool']} is a shared tool: only the platform grants it, in the "
                    "platform's file (catalog_export --platform).",
                ))
                continue
            if grant["agent"] is not None and grant["agent"] not in self.context.agents:
                self.problems.append(Problem(
                    f"{path}.agent", f"this tenant has no agent named {grant['agent']!r}; create it first "
                    f"(manage.py issue_agent_key --tenant SLUG --agent {grant['agent']} --create-agent).",
                ))
                continue
            pin = grant["pinned_version"]
            if pin is not None and not self.pinnable(grant["tool"], pin, f"{path}.pinned_version"):
                continue
            stored = current.get(key)
            if stored is not None and stored["pinned_version"] == pin:
                continue
            self.access.append(GrantSave(
                path=path, tools=frozenset({grant["tool"]}), tool=grant["tool"], agent=grant["agent"],
                pinned_version=pin,
                text=f"{'~' if stored else '+'} grant {grant['tool']} to {who}"
                + (f", pinned to v{pin}" if pin else ", latest published version"),
            ))
        for key in sorted(set(current) - seen):
            grant = current[key]
            self.access.append(GrantDelete(
                path="grants", tool=grant["tool"], agent=grant["agent"],
                text=f"- grant {grant['tool']} to {grant['agent'] or 'every agent'}",
            ))

    def pinnable(self, tool: str, number: Any, path: str) -> bool:
        statuses = self.context.shared_tools.get(tool) or self.versions_after.get(tool, {})
        status = statuses.get(number) if isinstance(number, int) else None
        if status in ("published", "deprecated"):
            return True
        self.problems.append(Problem(
            path, f"{tool} has no published or deprecated version {number!r} (after this file is "
            "applied); pin one of those, or leave it null for the latest published version.",
        ))
        return False

    def policies(self, wanted: list[dict[str, Any]]) -> None:
        current = {p["tool"]: p for p in self.current["policies"]}
        seen: set[str | None] = set()
        for policy in wanted:
            path, tool = policy["_path"], policy["tool"]
            scope = tool or "every tool"
            if tool in seen:
                self.problems.append(Problem(f"{path}.tool", f"a second policy for {scope}."))
                continue
            seen.add(tool)
            if tool is not None and not self.known(tool, f"{path}.tool"):
                continue
            limits, stored = _policy_limits(policy), current.get(tool)
            before = _policy_limits(stored)
            if stored is not None and before == limits:
                continue
            self.access.append(PolicySave(
                path=path, tools=frozenset({tool} - {None}), tool=tool, limits=limits,
                text=f"{'~' if stored else '+'} policy for {scope}{_limit_changes(before, limits)}",
            ))
        for tool in sorted(set(current) - seen, key=lambda t: t or ""):
            self.access.append(
                PolicyDelete(path="policies", tool=tool, text=f"- policy for {tool or 'every tool'}")
            )


def plan_document(*, wanted: Mapping[str, Any], current: Mapping[str, Any], context: Context) -> Plan:
    """The steps that make the tenant's catalog (`current`, as `tenant_document` gives it) say
    what `wanted` says, with what stops them (problems at YAML paths) and notes."""
    planner = CatalogPlanner(current, context)
    upstreams: list[Step] = []
    if "upstreams" in wanted:
        planner.upstreams(wanted["upstreams"], into=upstreams)
    planner.tools(wanted.get("tools", {}))
    planner.untouched_tools(wanted)
    if "toolsets" in wanted:
        planner.toolsets(wanted["toolsets"])
    if "grants" in wanted:
        planner.grants(wanted["grants"])
    if "policies" in wanted:
        planner.policies(wanted["policies"])
    return Plan(
        steps=(*upstreams, *planner.steps, *planner.later, *planner.access), notes=tuple(planner.notes),
        problems=tuple(planner.problems),
    )
