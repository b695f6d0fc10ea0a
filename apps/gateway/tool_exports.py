"""The tools one agent may call now, exported for its model: GET /api/v1/tools and MCP tools/list.

Built from the agent's catalog (latest published or pinned versions, toolset and phase)
and kept per process for each (agent, catalog generation, format, toolset, phase): the
generation changes whenever a version is published or a grant or policy changes, so a
stale export is never served and nothing has to be invalidated by hand.
"""

from __future__ import annotations

import threading

from apps.catalog.exports import ToolExport, export_tools
from apps.common.catalog_generation import catalog_generation
from apps.gateway.contracts import REQUEST_CAPABILITY

from .selectors import visible_tools

_MEMO: dict[tuple[int, int, int, str, str, str], ToolExport] = {}
_MEMO_LOCK = threading.Lock()


def agent_tool_export(
    *, tenant_id: int, agent_id: int, fmt: str, toolset: str | None, phase: str | None
) -> ToolExport:
    """This agent's callable tools in `fmt`, request_capability last.

    Raises InvalidArgsError for an unknown toolset or phase.
    """
    generation = catalog_generation()
    key = (generation, tenant_id, agent_id, fmt, toolset or "", phase or "")
    found = _MEMO.get(key)
    if found is not None:
        return found
    visible = visible_tools(tenant_id=tenant_id, agent_id=agent_id, toolset=toolset, phase=phase)
    ordered = sorted(
        visible.values(), key=lambda spec: (spec.tool_name == REQUEST_CAPABILITY, spec.tool_name)
    )
    export = export_tools(ordered, fmt)
    with _MEMO_LOCK:
        for stale in [k for k in _MEMO if k[0] != generation]:
            _MEMO.pop(stale, None)
        _MEMO[key] = export
    return export
