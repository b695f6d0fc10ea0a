"""Drift of an MCP server's tools: what differs between the definitions a tenant's published
versions were made from (their `source`) and what the server lists now. Pure.

One drift per kind of change of a tool: its text (description, title), its schema
(`inputSchema`, `outputSchema`), its annotations; a pinned tool the server no longer lists is
`removed`, a listed tool nobody saw at an import is `added`. Other keys (icons, `_meta`)
change nothing a model reads and are not compared.
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


def _part(definition: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {key: definition[key] for key in COMPARED[kind] if key in definition}


def _fingerprint(kind: str, before: Any, after: Any) -> str:
    return definition_digest({"kind": kind, "before": before, "after": after})


def drifts_of(
    *, pins: Mapping[str, Pin], listed: Sequence[Mapping[str, Any]], known: set[str]
) -> list[Drift]:
    """Every drift between `pins` (by the server's tool name) and the server's `listed` tools.
    `known` names the server's tools a curator has seen already (a version, published or not,
    was made from it, or the server listed it at an import): those are not `added`."""
    current_by_name = {str(d["name"]): dict(d) for d in listed}
    found: list[Drift] = []
    for name, pin in sorted(pins.items()):
        current = current_by_name.get(name)
        if current is None:
            fingerprint = _fingerprint(DriftKind.REMOVED, pin.definition, None)
            found.append(Drift(DriftKind.REMOVED, name, {}, fingerprint, pin))
            continue
        for kind in COMPARED:
            before, after = _part(pin.definition, kind), _part(current, kind)
            if before != after:
                fingerprint = _fingerprint(kind, before, after)
                found.append(Drift(kind, name, current, fingerprint, pin))
    for name, current in sorted(current_by_name.items()):
        if name not in known and name not in pins:
            found.append(Drift(DriftKind.ADDED, name, current,
                               _fingerprint(DriftKind.ADDED, None, current), None))
    return found
