"""The tools one agent may call now, exported for its model: GET /api/v1/tools and MCP tools/list
(and what MCP's tools/call answers as structured content, checked against the listed outputSchema).

Built from the agent's catalog (latest published or pinned versions, toolset and phase)
and kept per process for each (agent, catalog generation, format, toolset, phase): the
generation changes whenever a version is published or a grant or policy changes, so a
stale export is never served and nothing has to be invalidated by hand.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any

from apps.catalog.exports import ToolExport, export_tools
from apps.common.builtin_tools import REQUEST_CAPABILITY
from apps.common.catalog_generation import catalog_generation
from apps.common.errors import ToolHubError
from apps.common.executor_kinds import CODE_RUN_KIND
from apps.gateway.agent_catalogs import code_run_tools
from apps.gateway.contracts import VersionSpec
from apps.gateway.pipeline.output import structured_result
from apps.tenancy.authentication import AgentPrincipal

from .selectors import visible_tools

logger = logging.getLogger("toolhub.mcp")

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
    if any(spec.executor == CODE_RUN_KIND for spec in ordered):
        export = replace(export, code_runs=_code_run_estimates(visible, export, fmt))
    with _MEMO_LOCK:
        for stale in [k for k in _MEMO if k[0] != generation]:
            _MEMO.pop(stale, None)
        _MEMO[key] = export
    return export


def _code_run_estimates(
    visible: dict[str, VersionSpec], export: ToolExport, fmt: str
) -> dict[str, dict[str, int]]:
    """What code mode saves: each code-run tool's tokens (its description lists its tools as
    signatures) beside the tokens of those tools listed one by one in the same format."""
    inner = code_run_tools(visible)
    one_by_one = export_tools([inner[name] for name in sorted(inner)], fmt).token_estimate
    return {
        name: {"token_estimate": export.token_estimates[name], "tools_token_estimate": one_by_one,
               "tools": len(inner)}
        for name, spec in visible.items()
        if spec.executor == CODE_RUN_KIND
    }


def mcp_structured_content(
    envelope: dict[str, Any], principal: AgentPrincipal, toolset: str | None, phase: str | None, /
) -> dict[str, Any] | None:
    """What MCP's tools/call answers as `structuredContent` for `envelope`, a result of a call
    by `principal` in `toolset` and `phase`.

    A version without an output schema: the envelope itself, as always. A version with one
    (listed as its outputSchema): the result's data when it matches the schema
    (pipeline/output.py), else nothing: the answer is the text content only, and the log
    says why, so a client is never handed an object that breaks the schema it was promised.
    """
    name, number = envelope.get("tool"), envelope.get("version")
    try:
        # The catalog the call was validated against: read with the agent's key.
        version = visible_tools(
            tenant_id=principal.tenant_id, agent_id=principal.agent_id, toolset=toolset, phase=phase,
            generation=principal.catalog_generation,
        ).get(str(name))
    except ToolHubError:
        version = None
    if version is None or version.number != number or not version.output_schema:
        # Not a result of a version this agent sees now (an error before lookup, a catalog
        # changed since): the envelope, unless that version may have promised a schema.
        return envelope if version is None or not version.output_schema else None
    structured = structured_result(version, envelope)
    if structured.content is None and envelope.get("status") in ("ok", "empty"):
        logger.warning(
            "structured content of %s v%s left out: %s", version.tool_name, version.number, structured.problem
        )
    return structured.content
