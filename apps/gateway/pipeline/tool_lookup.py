"""Stage 0: which tool version a call names, looked up in the agent's preloaded catalog."""

from __future__ import annotations

from apps.common.errors import InvalidArgsError
from apps.gateway.agent_catalogs import AgentCatalog
from apps.gateway.contracts import VersionSpec

from .unknown_tool import unknown_tool_error


def resolve_tool(
    *,
    catalog: AgentCatalog,
    name: str,
    toolset: str | None,
    phase: str | None,
    opened: frozenset[str] = frozenset(),
) -> VersionSpec:
    """The version the agent calls under `name` now; raises the error the model should see.

    A tool of another toolset or phase that request_capability opened to the task (`opened`)
    is callable here too. InvalidArgsError for an unknown toolset or phase, ForbiddenError
    (not granted) or UnavailableError (deprecated, retired) for a tool the tenant has,
    UnknownToolError else.
    """
    check_toolset(catalog, toolset, phase)
    visible = catalog.visible(toolset, phase)
    spec = visible.get(name)
    if spec is not None:
        return spec
    if name in opened and name in catalog.callable:
        return catalog.visible(None, None)[name]
    if name not in catalog.callable and name in catalog.refused:
        raise catalog.refused[name]
    raise unknown_tool_error(
        name,
        [(s.tool_name, s.description) for s in visible.values()],
        elsewhere=catalog.places_of(name, toolset=toolset) if name in catalog.callable else (),
    )


def check_toolset(catalog: AgentCatalog, toolset: str | None, phase: str | None) -> None:
    """Raises InvalidArgsError for a phase without its toolset, or one the catalog lacks."""
    if phase and not toolset:
        raise InvalidArgsError(
            "A phase was given without its toolset.", hint="Send toolset together with phase."
        )
    if toolset and toolset not in catalog.toolsets:
        raise InvalidArgsError(
            f"There is no toolset named {toolset!r}.",
            hint=f"Known toolsets: {', '.join(sorted(catalog.toolsets)) or 'none'}.",
        )
    if toolset and phase and phase not in catalog.toolsets[toolset]:
        phases = sorted(p for p in catalog.toolsets[toolset] if p)
        raise InvalidArgsError(
            f"The toolset {toolset!r} has no phase {phase!r}.",
            hint=f"Its phases: {', '.join(phases) or 'none'}.",
        )
