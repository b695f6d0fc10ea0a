"""Checks of what breaks calls in ways a schema check does not show: nulls left out on the
wire, what an import could not map, a side effect only guessed, and optional fields whose
server default decides what a call means.

What an import records for them in the version's `source` (docs/lint.md):
- `source["dropped"]`: a list of `{"what": ..., "reason": ...}`, the parts of the operation
  (a body, a parameter) the import could not map and left out of the request;
- `source["side_effect_confirmed"]`: the side effect a curator confirmed by saving the draft
  in the admin (absent on an import's draft: the side effect there is the method's guess, or
  for an MCP tool without readOnlyHint or destructiveHint, the default of a write);
- `source["tool"]`: an MCP tool's definition as listed, whose annotations say (or not) what
  it does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from apps.common import json_pointer

from ..definitions import DEFAULT_HTTP_METHOD
from .findings import IMPORT_KINDS, INFO, WARNING, Finding, ToolDefinition

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
UPDATE_METHODS = frozenset({"PUT", "PATCH"})
# Names and summaries of operations that read, whatever their method (a POST search).
_READS_WORDS = re.compile(r"\b(search|query|queries|list|lookup|look up|find|validate|preview|estimate"
                          r"|calculate|verify|count|get)\b", re.IGNORECASE)
# Optional filters and page sizes whose server default changes what a call means (principle 7).
MEANING_DEFAULT_NAMES = frozenset({"limit", "page", "per_page", "page_size", "status", "state"})


def _admits_null(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    types = node.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    if "const" in node and node["const"] is None:
        return True
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    return any(_admits_null(branch) for key in ("anyOf", "oneOf") for branch in node.get(key) or ())


def _members(node: Any, pointer: str = "") -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """Every property under `node` through nested objects: its JSON pointer from the
    arguments, its schema, and whether its object requires it."""
    if not isinstance(node, Mapping):
        return
    required = set(node.get("required") or ())
    for name, sub in (node.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            member = f"{pointer}/{json_pointer.escaped(name)}"
            yield member, sub, name in required
            yield from _members(sub, member)


def check_send_null(tool: ToolDefinition) -> Iterable[Finding]:
    """An http version's nulls: the executor leaves every null out of the request except at
    the pointers `send_null` lists (docs/http-tools.md)."""
    config = tool.executor_config or {}
    if tool.executor != "http" or not isinstance(tool.parameters, Mapping):
        return
    listed = [p for p in config.get("send_null") or () if isinstance(p, str)]
    members = {pointer: (node, required) for pointer, node, required in _members(tool.parameters)}
    # A strict version admits null for every optional field: leaving it out is what null
    # means there, worth a note only where null may mean "clear it" (an update).
    updates = str(config.get("method", DEFAULT_HTTP_METHOD)).upper() in UPDATE_METHODS
    dropped = [p for p, (node, required) in members.items()
               if _admits_null(node) and (not required or (tool.strict and updates)) and p not in listed]
    if dropped:
        loose = [p for p in dropped if not tool.strict]
        yield Finding(
            WARNING if loose else INFO, "optional-sent-as-null", "executor_config/send_null",
            f"The schema admits null for {', '.join(dropped)}, but a null there is left out of the request "
            "(only the pointers in send_null are sent as null): a model that sends null to clear a field "
            "clears nothing, the upstream keeps the old value.",
            "If the API takes null there to clear the field, add the pointer to send_null; if not, remove "
            "null from the field's type so that the model leaves the field out instead."
            if loose else "Nothing to do if leaving them out is what null means for this API; otherwise "
            "add the pointers to send_null.",
        )
    if wrong := [p for p in listed if p not in members or not _admits_null(members[p][0])]:
        yield Finding(
            WARNING, "optional-sent-as-null", "executor_config/send_null",
            f"send_null lists {', '.join(wrong)}, which the schema does not admit null for (or names no "
            "property): validation refuses a null there before it could be sent, so the entry does nothing.",
            "Admit null in that field's type (e.g. \"type\": [\"string\", \"null\"]) if the API takes it, or "
            "remove the pointer from send_null.",
        )


def check_imported(tool: ToolDefinition) -> Iterable[Finding]:
    """What the import of an OpenAPI operation or an MCP tool recorded it could not do, or only
    guessed."""
    if not tool.imported:
        return
    dropped = [d for d in tool.source.get("dropped") or () if isinstance(d, Mapping)]
    if dropped:
        listed = "; ".join(f"{d.get('what', 'a part')} ({d.get('reason', 'no reason given')})"
                           for d in dropped)
        yield Finding(
            WARNING, "body-dropped", "executor_config/body",
            f"The import left out of the request what it could not map: {listed}. Calls never send it, "
            "so the upstream misses whatever it carries.",
            "Check in the API's document whether the operation needs it; if so, map it by hand in "
            "executor_config (body, body_media_type) and the parameters, or keep the tool unpublished.",
        )
    method = str((tool.executor_config or {}).get("method", DEFAULT_HTTP_METHOD)).upper()
    if (tool.source.get("kind") == "openapi" and method in WRITE_METHODS
            and tool.source.get("side_effect_confirmed") != tool.side_effect):
        reads = _READS_WORDS.search(f"{tool.name.replace('_', ' ')} {tool.description}")
        yield Finding(
            WARNING, "side-effect-unconfirmed", "side_effect",
            f"The side effect '{tool.side_effect}' was suggested from the method {method}, not confirmed "
            + (f"— and the tool's name or description says '{reads.group(0)}', which reads: a read marked "
               "write is approved, retried and reconciled like a write; a write marked readonly is not."
               if reads else "by a curator."),
            "Check what the operation does and set side_effect (readonly, write) on this draft's page, then "
            "save it: saving in the admin records the side effect as confirmed.",
        )
    if (tool.source.get("kind") == "mcp" and not _mcp_hints(tool)
            and tool.source.get("side_effect_confirmed") != tool.side_effect):
        yield Finding(
            WARNING, "side-effect-unconfirmed", "side_effect",
            f"The MCP server gave no readOnlyHint or destructiveHint for this tool, so it was imported as "
            f"'{tool.side_effect}' without anyone saying so: a read marked write is approved, retried and "
            "reconciled like a write (and listed as destructive); a write marked readonly runs unledgered.",
            "Check what the tool does (its server's documentation, its description) and set side_effect "
            "(readonly, recomputable, write) on this draft's page, then save it: saving in the admin "
            "records the side effect as confirmed.",
        )


def _mcp_hints(tool: ToolDefinition) -> bool:
    """Whether the server said what an MCP tool does to the world (readOnlyHint or
    destructiveHint), in the annotations the version keeps or the definition it was made from."""
    listed = tool.source.get("tool")
    server = listed.get("annotations") if isinstance(listed, Mapping) else None
    said = {**(server if isinstance(server, Mapping) else {}), **tool.annotations}
    return any(isinstance(said.get(hint), bool) for hint in ("readOnlyHint", "destructiveHint"))


def with_side_effect_confirmed(source: Mapping[str, Any], side_effect: str) -> dict[str, Any]:
    """An imported version's source recording that a curator confirmed its side effect
    (check_imported then stops asking); a hand-written version's, unchanged."""
    if source.get("kind") not in IMPORT_KINDS:
        return dict(source)
    return {**source, "side_effect_confirmed": side_effect}


def check_optional_meaning(tool: ToolDefinition) -> Iterable[Finding]:
    """Optional page sizes and status filters: leaving them out lets the server's default decide
    what the call returns (principle 7). Strict versions require every field already."""
    if tool.strict or not isinstance(tool.parameters, Mapping):
        return
    required = set(tool.parameters.get("required") or ())
    for name in tool.parameters.get("properties") or {}:
        if name.lower() in MEANING_DEFAULT_NAMES and name not in required:
            yield Finding(
                WARNING, "optional-changes-meaning", f"parameters/properties/{name}",
                f"'{name}' is optional: a call that leaves it out gets the server's default (how many "
                "results, which page, only the open ones), so it means something the model did not choose.",
                f"Add '{name}' to required and say the usual value in its description (e.g. 'use 20', "
                "'use open'), or tick strict.",
            )
