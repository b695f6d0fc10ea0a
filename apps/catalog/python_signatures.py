"""Tool versions as Python signatures: how code mode (`run_python`) tells a model its tools.

A model that writes code reads functions better than JSON Schemas, and a signature with a
one-line docstring is a fraction of the schema's tokens. Each tool becomes

    def search_orders(*, status: Literal["paid", "pending"], start_date: str, limit: int = 20) -> Any:
        \"\"\"Search the user's orders by status and date range.\"\"\"

built from what the model may fill (bound fields removed, as in every export): required
parameters first, keyword-only, types from the JSON Schema (an enum as a Literal; the
formats of date fields in a comment below), and the first sentence of the version's
description. The full schema still validates every call, in code as anywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .exports import Exportable, model_schema

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.DOTALL)
DOCSTRING_CHARS = 160


def python_type(node: Any) -> str:
    """The Python annotation of a JSON Schema node, as a model reads it."""
    if not isinstance(node, Mapping):
        return "Any"
    if "enum" in node and isinstance(node["enum"], list | tuple) and node["enum"]:
        return f"Literal[{', '.join(json.dumps(value) for value in node['enum'])}]"
    if "const" in node:
        return f"Literal[{json.dumps(node['const'])}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(node.get(union), list | tuple):
            return _union(python_type(branch) for branch in node[union])
    kind = node.get("type")
    if isinstance(kind, list | tuple):
        return _union(python_type({**node, "type": one}) for one in kind)
    if kind == "array":
        return f"list[{python_type(node.get('items'))}]"
    if kind == "object":
        return "dict"
    return _SCALARS.get(str(kind), "Any")


def _union(types: Iterable[str]) -> str:
    unique = list(dict.fromkeys(types))
    # None last, as people write optionals.
    unique.sort(key=lambda name: name == "None")
    return " | ".join(unique) if unique else "Any"


def _parameter(name: str, node: Any, *, required: bool) -> str:
    annotation = python_type(node)
    if required:
        return f"{name}: {annotation}"
    default = node.get("default") if isinstance(node, Mapping) else None
    if default is None and "None" not in annotation.split(" | "):
        annotation = f"{annotation} | None"
    return f"{name}: {annotation} = {_literal(default)}"


def _literal(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


def docstring(description: str) -> str:
    """The first sentence of a description, on one line, at most DOCSTRING_CHARS characters."""
    text = " ".join(description.split())
    if match := _FIRST_SENTENCE.match(text):
        text = match.group(1)
    if len(text) > DOCSTRING_CHARS:
        text = text[: DOCSTRING_CHARS - 1].rstrip() + "…"
    return text.replace('"""', "'''").replace("\\", "\\\\")


def python_signature(tool: Exportable) -> str:
    """One tool as a function signature with its one-line docstring."""
    schema = model_schema(tool)
    listed = schema.get("properties")
    properties: dict[str, Any] = listed if isinstance(listed, dict) else {}
    required = [name for name in schema.get("required") or [] if name in properties]
    optional = [name for name in properties if name not in required]
    parameters = [_parameter(name, properties[name], required=True) for name in required]
    parameters += [_parameter(name, properties[name], required=False) for name in optional]
    dates = [
        name
        for name in properties
        if isinstance(properties[name], Mapping) and properties[name].get("format") in ("date", "date-time")
    ]
    signature = f"def {tool.tool_name}(*{', ' if parameters else ''}{', '.join(parameters)}) -> Any:"
    lines = [signature, f'    """{docstring(tool.description)}"""']
    if dates:
        formats = ", ".join(f"{name}: {properties[name]['format']}" for name in dates)
        lines.append(f"    # formats: {formats} (ISO 8601)")
    return "\n".join(lines)


def python_signatures(tools: Iterable[Exportable]) -> str:
    """Every tool's signature, in the given order, separated by a blank line."""
    return "\n\n".join(python_signature(tool) for tool in tools)
