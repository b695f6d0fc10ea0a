"""What an mcp version's executor_config may say, checked by the catalog on save (declared
to it through apps/common/executor_kinds.py). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.common import json_pointer

# A tool of an MCP server upstream, called by the upstream's name for it; on writes the
# ledger's idempotency key goes into the tool's argument `idempotency_argument`.
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "upstream": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"},
        "tool": {"type": "string", "minLength": 1, "maxLength": 128},
        "idempotency_argument": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"},
        # The top-level arguments (JSON pointers, "/name") whose null is sent; any other
        # null argument is left out.
        "send_null": {"type": "array", "items": {"type": "string", "pattern": "^/([^/~]|~[01])+$"},
                      "uniqueItems": True},
    },
    "required": ["upstream", "tool"],
    "additionalProperties": False,
}


def config_problems(*, executor_config: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    """How an mcp version's config disagrees with its parameters: the argument that carries the
    idempotency key is ToolHub's to fill, so the model must not see or fill it; `send_null`
    names properties of the parameters."""
    known = set(parameters.get("properties", {}))
    problems = []
    argument = executor_config.get("idempotency_argument")
    if argument in known:
        problems.append(
            f"idempotency_argument {argument!r} is also a property of the parameters schema: remove it "
            "there. ToolHub fills it with the call's idempotency key; a model never does."
        )
    send_null = executor_config.get("send_null") or ()
    if unknown := [p for p in send_null if json_pointer.unescaped(p[1:]) not in known]:
        problems.append(
            f"send_null names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not a "
            "property of the parameters schema."
        )
    return problems
