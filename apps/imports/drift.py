"""Drift of an MCP server's tools: what differs between the definitions a tenant's published
versions were made from (their `source`) and what the server lists now. Pure.

One drift per kind of change of a tool: its text (description, title), its schema
(`inputSchema`, `outputSchema`), its annotations; a pinned tool the server no longer lists is
`removed`, a listed tool nobody saw at an import is `added`. Other keys (icons, `_meta`)
change nothing a model reads and are not compared. Each tool is compared on its own: one whose
listing cannot be read (a lone surrogate, say) is `uncompared`, and the others still are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apps.catalog.models import DriftKind

from .mcp_tools import definition_digest

# kind → the keys of a listed tool it compares
COMPARED: dict[str, tuple[str, ...]] = {
    DriftKind.DESCRIPTION: ("title", "description"),
    DriftKind.SCHEMA: ("inputSchema", "outputSchema"),
    DriftKind.ANNOTATIONS: ("annotations",),
}


@dataclass(frozen=True)
class Pin:
    """The published version a server's tool is pinned to, and the definition it was made from."""

    upstream_tool: str
    definition: dict[str, Any]
    tool_id: int
    version_id: int


@dataclass(frozen=True)
class Drift:
    kind: str
    upstream_tool: str
    current: dict[str, Any]
    # Digest of the part that differs, before and now: the same drift found again has it too.
    fingerprint: str
    pin: Pin | None

    @property
    def pinned(self) -> dict[str, Any]:
        """The definition the pinned version was made from ({} for an added tool)."""
        return self.pin.definition if self.pin is not None else {}


@dataclass(frozen=True)
class Uncompared:
    """A listed or pinned tool the check could not compare, and why (for the report, and for
    the finding that suspends a pinned one)."""

    upstream_tool: str
    problem: str
    pin: Pin | None


@dataclass(frozen=True)
class Comparison:
    drifts: list[Drift]
    uncompared: list[Uncompared]


def _part(definition: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {key: definition[key] for key in COMPARED[kind] if key in definition}


def _fingerprint(kind: str, before: Any, after: Any) -> str:
    return definition_digest({"kind": kind, "before": before, "after": after})


# What comparing or digesting a definition a server wrote may raise: a lone surrogate cannot
# be encoded, a value json cannot serialise, nesting too deep to walk.
UNREADABLE = (UnicodeError, ValueError, TypeError, RecursionError)


def _unreadable(error: Exception) -> str:
    return f"its listed definition cannot be read ({type(error).__name__})"


def _drifts_of_tool(pin: Pin, current: dict[str, Any] | None) -> list[Drift]:
    name = pin.upstream_tool
    if current is None:
        fingerprint = _fingerprint(DriftKind.REMOVED, pin.definition, None)
        return [Drift(DriftKind.REMOVED, name, {}, fingerprint, pin)]
    found = []
    for kind in COMPARED:
        before, after = _part(pin.definition, kind), _part(current, kind)
        if before != after:
            found.append(Drift(kind, name, current, _fingerprint(kind, before, after), pin))
    return found


def drifts_of(
    *, pins: Mapping[str, Pin], listed: Sequence[Mapping[str, Any]], known: set[str]
) -> Comparison:
    """Every drift between `pins` (by the server's tool name) and the server's `listed` tools,
    and the pinned tools that could not be compared. `known` names the server's tools a
    curator has seen already (a version, published or not, was made from it, or the server
    listed it at an import): those are not `added`."""
    current_by_name = {str(d["name"]): dict(d) for d in listed}
    found: list[Drift] = []
    uncompared: list[Uncompared] = []
    for name, pin in sorted(pins.items()):
        try:
            found += _drifts_of_tool(pin, current_by_name.get(name))
        except UNREADABLE as error:
            uncompared.append(Uncompared(upstream_tool=name, problem=_unreadable(error), pin=pin))
    for name, current in sorted(current_by_name.items()):
        if name in known or name in pins:
            continue
        try:
            fingerprint = _fingerprint(DriftKind.ADDED, None, current)
            found.append(Drift(DriftKind.ADDED, name, current, fingerprint, None))
        except UNREADABLE as error:
            uncompared.append(Uncompared(upstream_tool=name, problem=_unreadable(error), pin=None))
    return Comparison(drifts=found, uncompared=uncompared)
