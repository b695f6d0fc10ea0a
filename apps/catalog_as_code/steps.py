"""The steps a catalog plan is made of (plan.py, platform_plan.py makes them; services.py
carries them out, each through its app's service), the context a plan is made against, and
the plan itself. Frozen values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import Problem


@dataclass(frozen=True)
class Step:
    """One service call of a plan. `tools` are the tools it needs to exist (a step is
    skipped when an earlier step about one of them was refused)."""

    path: str
    text: str
    tools: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ToolCreate(Step):
    name: str = ""
    summary: str = ""


@dataclass(frozen=True)
class ToolUpdate(Step):
    name: str = ""
    summary: str = ""
    replaced_by: str | None = None


@dataclass(frozen=True)
class DraftCreate(Step):
    tool: str = ""
    number: int = 0  # the number it will get: the tool's highest so far + 1
    content: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DraftEdit(Step):
    tool: str = ""
    number: int = 0
    content: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StatusChange(Step):
    tool: str = ""
    number: int = 0
    to: str = ""


@dataclass(frozen=True)
class UpstreamSave(Step):
    name: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    # A stdio MCP server's launcher (by name) and arguments; None for an upstream at a URL.
    launcher: str | None = None
    launcher_args: tuple[str, ...] = ()
    # name, kind, field of the credential it sends; None for none
    credential: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ToolsetSave(Step):
    name: str = ""
    description: str = ""
    members: tuple[str, ...] = ()
    phases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gates: frozenset[str] = frozenset()  # the phases that gate; the others only prune


@dataclass(frozen=True)
class ToolsetDelete(Step):
    name: str = ""


@dataclass(frozen=True)
class GrantSave(Step):
    tool: str = ""
    agent: str | None = None
    pinned_version: int | None = None


@dataclass(frozen=True)
class GrantDelete(Step):
    tool: str = ""
    agent: str | None = None


@dataclass(frozen=True)
class PolicySave(Step):
    tool: str | None = None
    limits: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PolicyDelete(Step):
    tool: str | None = None


@dataclass(frozen=True)
class Context:
    """What a plan is made against besides the tenant's own document: the shared tools its
    agents also see (name → {version number: status}) and the tenant's agents."""

    shared_tools: Mapping[str, Mapping[int, str]]
    agents: frozenset[str]


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    notes: tuple[str, ...]
    problems: tuple[Problem, ...]
