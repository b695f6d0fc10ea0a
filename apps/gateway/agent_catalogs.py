"""What one agent may call, as the validation layer and the exports read it: its catalog,
loaded by selectors.py once per catalog generation, and the code-run versions (run_python)
as they are beside the tools their code may call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from apps.catalog.python_signatures import python_signatures
from apps.common.builtin_tools import REQUEST_CAPABILITY
from apps.common.errors import ForbiddenError, UnavailableError
from apps.common.executor_kinds import CODE_RUN_KIND

from .contracts import PolicySpec, VersionSpec

# The policy of a tool no policy narrows: one object, so what is memoized per policy
# (pipeline/rules.py) is found again on the next call.
NO_POLICY = PolicySpec()


@dataclass(frozen=True)
class ToolPlace:
    """A toolset and phase where the agent may call a tool ("" phase: the toolset as a whole)."""

    toolset: str
    phase: str

    def __str__(self) -> str:
        return f"phase {self.phase} of toolset {self.toolset}" if self.phase else f"toolset {self.toolset}"

    def as_dict(self) -> dict[str, str | None]:
        return {"toolset": self.toolset, "phase": self.phase or None}


@dataclass(frozen=True)
class AgentCatalog:
    """Everything one agent may call, and why it may not call the rest (loaded by selectors)."""

    callable: dict[str, VersionSpec] = field(default_factory=dict)
    # Tools the tenant can see but this agent may not call now, with the reason.
    refused: dict[str, ForbiddenError | UnavailableError] = field(default_factory=dict)
    # toolset → phase ("" for the whole toolset) → tool names
    toolsets: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)
    policies: dict[int | None, PolicySpec] = field(default_factory=dict)
    # toolset → the tools of its gating phases: request_capability never opens them there.
    gated: dict[str, frozenset[str]] = field(default_factory=dict)
    # visible() by (toolset, phase): code-run versions are derived from the tools beside them.
    _visible: dict[tuple[str, str], dict[str, VersionSpec]] = field(default_factory=dict, repr=False)

    def visible(self, toolset: str | None, phase: str | None) -> dict[str, VersionSpec]:
        """The callable tools, narrowed to a toolset and phase when given (request_capability
        is in every one), each code-run version as it is there (`code_run_version`)."""
        key = (toolset or "", phase or "")
        found = self._visible.get(key)
        if found is not None:
            return found
        if toolset:
            names = self.toolsets.get(toolset, {}).get(phase or "", frozenset())
            found = {
                name: spec
                for name, spec in self.callable.items()
                if name in names or name == REQUEST_CAPABILITY
            }
        else:
            found = dict(self.callable)
        inner = code_run_tools(found)
        for name, spec in found.items():
            if spec.executor == CODE_RUN_KIND:
                found[name] = code_run_version(spec, inner)
        self._visible[key] = found
        return found

    def places_of(self, name: str, *, toolset: str | None) -> tuple[ToolPlace, ...]:
        """Where this agent may call `name`: the phases holding it (a toolset as a whole
        when none of its phases does), those of `toolset` first."""
        places = []
        for set_name, phases in self.toolsets.items():
            named = [ToolPlace(set_name, p) for p, names in phases.items() if p and name in names]
            if not named and name in phases.get("", ()):
                named = [ToolPlace(set_name, "")]
            places += named
        return tuple(sorted(places, key=lambda p: (p.toolset != toolset, p.toolset, p.phase)))

    @property
    def prerequisites(self) -> frozenset[str]:
        """Tools some callable tool requires earlier in a task: their success is remembered."""
        return frozenset(
            rule["tool"]
            for spec in self.callable.values()
            for rule in spec.rules
            if rule.get("type") == "requires_earlier_call"
        )

    def policy_for(self, tool_id: int) -> PolicySpec:
        return self.policies.get(tool_id) or self.policies.get(None) or NO_POLICY


CODE_RUN_TOOLS_HEADING = (
    "In the code, the object `tools` has one function per tool below; call them with keyword "
    'arguments (plus call_id="..." to name a call). Each runs through ToolHub like a call of '
    "yours and returns the tool's data (for no items, what the tool answered), raises "
    "ToolCallError (.envelope) for an error and ToolCallPending (.envelope) when the call waits "
    "on a worker or an approval. Set `result` to what you want back; print() is returned too."
)


def code_run_tools(visible: Mapping[str, VersionSpec]) -> dict[str, VersionSpec]:
    """The tools code of a run may call: those visible beside it but code runs themselves
    and the built-in tools (the model calls those directly)."""
    return {
        name: spec
        for name, spec in visible.items()
        if spec.executor != CODE_RUN_KIND and name != REQUEST_CAPABILITY
    }


def code_run_version(spec: VersionSpec, inner: Mapping[str, VersionSpec]) -> VersionSpec:
    """A code-run version (run_python) as it is beside `inner`, the tools its code may call.

    Its description lists them as Python signatures; its side effect is the strongest of
    theirs (readonly when they all are), so a run that can only read is never held as a
    write; it runs on a worker, and a call waits for its outcome up to its timeout.
    """
    ordered = [inner[name] for name in sorted(inner)]
    effects = {tool.side_effect for tool in ordered}
    side_effect = next((e for e in ("write", "recomputable") if e in effects), "readonly")
    listing = python_signatures(ordered) if ordered else "(none: no tool is callable here)"
    description = f"{spec.description.rstrip()}\n\n{CODE_RUN_TOOLS_HEADING}\n\n{listing}"
    return replace(
        spec,
        description=description,
        side_effect=side_effect,
        mode="async",
        waits_for_worker=True,
    )
