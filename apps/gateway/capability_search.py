"""What `request_capability` finds: the agent's granted tools that do what it asked for, and
which of them the task may call now.

The search (apps/catalog/tool_search.py) runs over the tools the agent is granted, never
others, by meaning. A match offered where the task is already is callable as it is; one of
another toolset or phase is opened to the task (apps/tenancy TaskToolOpening, audited), so
the task may call it from here for the rest of its life, unless:

- a gating phase of the current toolset holds it ("refund only after looking up"): it waits
  for the task to reach that phase;
- a tenant policy keeps it closed (`open_on_request` off, for the tool or the tenant), or the
  task has opened `max_opened_per_task` tools already.

With no match, the answer names the closest granted tools, so the model can tell the user
what it can do instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.catalog.exports import model_schema
from apps.catalog.python_signatures import docstring
from apps.catalog.tool_search import tool_search
from apps.common.builtin_tools import REQUEST_CAPABILITY
from apps.common.capability_hooks import capability_recorder
from apps.common.capability_names import capability_name
from apps.tenancy.selectors import task_tool_ids_opened
from apps.tenancy.services import ToolOpening, task_tools_open

from .agent_catalogs import AgentCatalog
from .contracts import PolicySpec, VersionSpec
from .executors.base import ExecutionRequest, tool_callable
from .request_capability import REQUEST_CAPABILITY_CALLABLE
from .selectors import agent_catalog

MATCHES_LISTED = 3
CLOSEST_LISTED = 3


@dataclass(frozen=True)
class CapabilitySearch:
    """What a request found: `matches` (each saying whether the task may call it now) or, when
    none, the `closest` tools; `hint` says what to do next."""

    matches: list[dict[str, Any]] = field(default_factory=list)
    closest: list[dict[str, Any]] = field(default_factory=list)
    hint: str = ""


def find_capability(request: ExecutionRequest, query: str) -> CapabilitySearch:
    """Search the agent's granted tools for `query`; open the matches the task may have."""
    if request.tenant_id is None or request.agent_id is None:
        return CapabilitySearch()
    catalog = agent_catalog(tenant_id=request.tenant_id, agent_id=request.agent_id)
    granted = {
        spec.tool_id: spec
        for name, spec in catalog.visible(None, None).items()
        if name != REQUEST_CAPABILITY and spec.tool_id
    }
    if not granted:
        return CapabilitySearch(hint="No tool of yours does this.")
    found = tool_search().search(
        query,
        tool_ids=list(granted),
        limit=max(MATCHES_LISTED, CLOSEST_LISTED),
        # The version the agent calls (a grant may pin one), not merely the latest published.
        pinned={tool_id: spec.version_id for tool_id, spec in granted.items()},
    )
    matched = [m for m in found if m.matched][:MATCHES_LISTED]
    if not matched:
        closest = [_listed(granted[m.tool_id], catalog, request.toolset) for m in found[:CLOSEST_LISTED]]
        names = ", ".join(item["name"] for item in closest)
        return CapabilitySearch(
            closest=closest,
            hint=f"None of your tools does this; the closest are {names}." if names else "",
        )
    return _answer(request, catalog, [granted[m.tool_id] for m in matched])


def _answer(request: ExecutionRequest, catalog: AgentCatalog, specs: list[VersionSpec]) -> CapabilitySearch:
    here = catalog.visible(request.toolset, request.phase)
    # Of each match not offered here: why it may not be opened to the task, None when it may.
    refusals = {
        spec.tool_name: _closed_because(spec, catalog, request)
        for spec in specs
        if spec.tool_name not in here
    }
    already = task_tool_ids_opened(
        tenant_id=request.tenant_id or 0, agent_id=request.agent_id or 0, task_id=request.task_id
    )
    new = [
        s
        for s in specs
        if s.tool_name in refusals and refusals[s.tool_name] is None and s.tool_id not in already
    ]
    cap = catalog.policies.get(None, PolicySpec()).max_opened_per_task
    if cap is not None:
        for spec in new[max(cap - len(already), 0) :]:
            refusals[spec.tool_name] = f"this task has opened {cap} tools already, the most a task may"
    openings = [
        ToolOpening(
            tenant_id=request.tenant_id or 0,
            agent_id=request.agent_id or 0,
            task_id=request.task_id,
            tool_id=spec.tool_id,
            capability=capability_name(str(request.arguments.get("capability", ""))),
            toolset=request.toolset or "",
            phase=request.phase or "",
        )
        for spec in new
        if refusals[spec.tool_name] is None
    ]
    task_tools_open(openings=openings, actor=f"agent:{request.tenant_slug}/{request.agent_id}")
    matches = []
    for spec in specs:
        listed = _listed(spec, catalog, request.toolset)
        listed["callable"] = spec.tool_name in here or refusals[spec.tool_name] is None
        if spec.tool_name not in here and listed["callable"]:
            # Opened to the task (now or earlier in it): the model has no schema of it yet.
            listed["opened"] = True
            listed["parameters"] = model_schema(spec)
        elif not listed["callable"]:
            listed["closed"] = refusals[spec.tool_name]
        matches.append(listed)
    return CapabilitySearch(matches=matches, hint=_hint(matches, request))


def _closed_because(spec: VersionSpec, catalog: AgentCatalog, request: ExecutionRequest) -> str | None:
    """Why `spec` may not be opened to the task from where it is; None when it may."""
    if request.toolset and spec.tool_name in catalog.gated.get(request.toolset, frozenset()):
        places = [
            p
            for p in catalog.places_of(spec.tool_name, toolset=request.toolset)
            if p.toolset == request.toolset
        ]
        where = f"phase {places[0].phase}" if places and places[0].phase else "its phase"
        return f"it waits for the task to reach {where} of toolset {request.toolset}"
    if not catalog.policy_for(spec.tool_id).open_on_request:
        return "the tenant's policy keeps it to the toolsets and phases that offer it"
    return None


def _listed(spec: VersionSpec, catalog: AgentCatalog, toolset: str | None) -> dict[str, Any]:
    places = catalog.places_of(spec.tool_name, toolset=toolset)
    return {
        "name": spec.tool_name,
        "description": docstring(spec.description),
        "toolset": places[0].toolset if places else None,
        "phase": (places[0].phase or None) if places else None,
    }


def _hint(matches: Sequence[Mapping[str, Any]], request: ExecutionRequest) -> str:
    opened = [m["name"] for m in matches if m.get("opened")]
    here = [m["name"] for m in matches if m["callable"] and not m.get("opened")]
    parts = []
    if opened:
        verb = "is" if len(opened) == 1 else "are"
        parts.append(
            f"{', '.join(opened)} {verb} open to this task ({request.task_id}) now: call it with the "
            "same toolset and phase; its parameters are in matches."
        )
    if here:
        parts.append(f"Already among your tools here: {', '.join(here)}.")
    for match in matches:
        if not match["callable"]:
            parts.append(f"{match['name']} does this but cannot be called now: {match['closed']}.")
    return " ".join(parts)


@tool_callable(REQUEST_CAPABILITY_CALLABLE)
def request_capability(request: ExecutionRequest) -> dict[str, Any]:
    """Find what the agent asked for among the tools it is granted; open the matches that may
    be opened to the task; record the request, with what it opened, for the operators."""
    arguments = request.arguments
    # The capability alone: "what you need, in a few words". The reason tells the user's story,
    # whose words ("the user wants…") would match tools that do something else.
    found = find_capability(request, arguments["capability"])
    answer = capability_recorder().capability_requested(
        tenant_slug=request.tenant_slug,
        task_id=request.task_id,
        call_id=request.call_id,
        capability=arguments["capability"],
        reason=arguments["reason"],
        example_arguments=arguments.get("example_arguments"),
        opened=[match["name"] for match in found.matches if match.get("opened")],
    )
    if found.matches:
        # The operators' answer still counts (planned, fulfilled, declined); "recorded, tell the
        # user it cannot be done" does not when a tool does it.
        said = answer["hint"] if answer["recorded"]["status"] != "open" else ""
        return {**answer, "matches": found.matches, "hint": f"{said} {found.hint}".strip()}
    return {
        **answer,
        "matches": [],
        "closest": found.closest,
        "hint": f"{answer['hint']} {found.hint}".strip(),
    }
