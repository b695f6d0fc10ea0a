"""The MCP annotations of a tool version (MCP's ToolAnnotations): what a version may store, and
what `/mcp`'s tools/list shows. Pure.

An import stores the annotations the server listed (`ToolVersion.annotations`), reviewed and
frozen with the rest of the version. The hints about side effects are not taken from them:
they are derived from the version's reviewed side-effect class, which wins where the two
disagree, because that class is how ToolHub runs the call (principle 18: what the model and
the client see is ToolHub's reviewed version, not the upstream's word).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The keys a version may carry, and their JSON types.
ANNOTATION_TYPES: dict[str, type] = {
    "title": str, "readOnlyHint": bool, "destructiveHint": bool, "idempotentHint": bool,
    "openWorldHint": bool,
}
SIDE_EFFECT_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint")


def mcp_annotations(*, side_effect: str, annotations: Mapping[str, Any]) -> dict[str, Any]:
    """A version's annotations as listed: the stored ones, with the side-effect hints derived.

    - readOnlyHint: true only for readonly;
    - destructiveHint: true for a write (MCP's default for a tool that is not read-only),
      false for readonly and recomputable, which change nothing outside;
    - idempotentHint: true for every class. Readonly and recomputable calls can run again
      with the same effect; a write runs through the ledger, whose key covers the task, call,
      tool and arguments, so the same call sent again answers the first outcome instead of
      running twice;
    - title and openWorldHint: the import's, when it brought them (ToolHub's tools have no
      title of their own).
    """
    kept = {key: annotations[key] for key in ANNOTATION_TYPES
            if key in annotations and key not in SIDE_EFFECT_HINTS}
    return {
        **kept,
        "readOnlyHint": side_effect == "readonly",
        "destructiveHint": side_effect == "write",
        "idempotentHint": True,
    }
