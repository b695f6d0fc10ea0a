"""Null in a tool's arguments: whether a schema node admits it, and the nulls a strict
export lets a model send for "not given". Pure functions: the catalog's exports make
optional fields nullable with the first, the gateway's pipeline drops those nulls with the
second before the schema stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def allows_null(node: Any) -> bool:
    """Whether a schema node admits null (an untyped node admits anything)."""
    if not isinstance(node, Mapping):
        return node is not False
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list | tuple) and "null" in kind):
        return True
    if "enum" in node:
        return None in node["enum"]
    if "const" in node:
        return node["const"] is None
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list | tuple):
            return any(allows_null(variant) for variant in node[key])
    return kind is None and "$ref" not in node


def strip_optional_nulls(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` without the nulls a strict export let the model send for optional fields.

    The OpenAI export makes every property required and optional ones nullable, so a model
    says "not given" with null. Where the stored schema does not admit null for a property
    that is not required, null means absent; everything else is left for the schema stage.
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(arguments)
    required = set(schema.get("required") or ())
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        sub = properties.get(name)
        if value is None and name not in required and sub is not None and not allows_null(sub):
            continue
        out[name] = _strip_nested(value, sub)
    return out


def _strip_nested(value: Any, schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict):
        return strip_optional_nulls(value, schema)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_strip_nested(item, schema["items"]) for item in value]
    return value
