"""Toolsets in a catalog document: their tools and phases. Pure: no queries and no writes.

A phase that only prunes the list is written as the list of its tool names, as it always
was. A phase that gates (its tools wait for the task to reach it: request_capability never
opens them from another phase) is a mapping, `gates: true` first so it is read before the
list:

    phases:
      lookup:
      - get_order
      resolve:
        gates: true
        tools:
        - refund_payment

The checked document holds each phase in the form an export writes (a mapping only when it
gates), so a file and the database compare as they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apps.catalog.models import Toolset, ToolsetPhase

from .checks import Problem, expect, unknown_keys

PHASE_KEYS = ("gates", "tools")


def phase_entry(names: Iterable[str], *, gates: bool) -> list[str] | dict[str, Any]:
    """A phase as the document writes it: its sorted tool names, in a mapping when it gates."""
    tools = sorted(names)
    return {"gates": True, "tools": tools} if gates else tools


def phase_tools(entry: list[str] | Mapping[str, Any]) -> list[str]:
    return list(entry["tools"]) if isinstance(entry, Mapping) else list(entry)


def phase_gates(entry: list[str] | Mapping[str, Any] | None) -> bool:
    return isinstance(entry, Mapping) and bool(entry["gates"])


def _phase_of_model(phase: ToolsetPhase) -> list[str] | dict[str, Any]:
    return phase_entry((t.name for t in phase.tools.all()), gates=phase.gates)


def toolsets_section(toolsets: Iterable[Toolset]) -> dict[str, Any]:
    """Toolsets by name, with their tools and phases (prefetched)."""
    return {
        toolset.name: {
            "description": toolset.description,
            "tools": sorted(t.name for t in toolset.tools.all()),
            "phases": {
                phase.name: _phase_of_model(phase)
                for phase in sorted(toolset.phases.all(), key=lambda p: p.name)
            },
        }
        for toolset in sorted(toolsets, key=lambda s: s.name)
    }


def _check_names(raw: Any, path: str, problems: list[Problem]) -> list[str] | None:
    if not expect(raw, list, path, "a list of tool names", problems):
        return None
    names = [n for i, n in enumerate(raw) if expect(n, str, f"{path}[{i}]", "a tool name", problems)]
    return sorted(set(names))


def _check_phase(raw: Any, path: str, problems: list[Problem]) -> list[str] | dict[str, Any] | None:
    """A phase: a list of tool names (it prunes), or a mapping of `tools` and `gates`."""
    if raw is None or isinstance(raw, list):
        return _check_names(raw or [], path, problems)
    if not isinstance(raw, dict):
        problems.append(Problem(path, "expected a list of tool names, or a mapping with `tools` and "
                                      f"`gates: true` for a phase that gates; found {type(raw).__name__}: "
                                      f"{raw!r}."))
        return None
    unknown_keys(raw, PHASE_KEYS, path, problems)
    gates = raw.get("gates", False)
    names = _check_names(raw.get("tools") or [], f"{path}.tools", problems)
    if not expect(gates, bool, f"{path}.gates", "true (its tools wait for the task to reach this phase) "
                  "or false (it only prunes)", problems) or names is None:
        return None
    return phase_entry(names, gates=gates)


def _check_toolset(raw: Any, path: str, problems: list[Problem]) -> dict[str, Any] | None:
    if not expect(raw, dict, path, "a mapping (a toolset)", problems):
        return None
    unknown_keys(raw, ("description", "tools", "phases"), path, problems)
    description, phases = raw.get("description") or "", raw.get("phases") or {}
    tools = _check_names(raw.get("tools") or [], f"{path}.tools", problems)
    if not (expect(description, str, f"{path}.description", "text", problems)
            and expect(phases, dict, f"{path}.phases", "a mapping of phase → tool names", problems)):
        return None
    checked = {str(name): _check_phase(phase, f"{path}.phases.{name}", problems)
               for name, phase in phases.items()}
    if tools is None or any(v is None for v in checked.values()):
        return None
    return {"description": description, "tools": tools, "phases": dict(sorted(checked.items()))}


def check_toolsets(raw: Any, problems: list[Problem]) -> dict[str, Any] | None:
    """The `toolsets` section checked, or None when it is not a mapping (a problem says so)."""
    if not expect(raw, dict, "toolsets", "a mapping of toolset name → toolset", problems):
        return None
    toolsets = {str(n): _check_toolset(s, f"toolsets.{n}", problems) for n, s in raw.items()}
    return {n: s for n, s in sorted(toolsets.items()) if s is not None}
