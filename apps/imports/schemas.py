"""OpenAPI schema objects as the JSON Schema (Draft 2020-12) a tool version stores. Pure.

The import's conversion (drafts.py uses it for OpenAPI operations, mcp_tools.py for MCP
input schemas): OpenAPI 3.0's `nullable` and 3.1's `type: [.., "null"]` both become a type
admitting null, and nothing else admits null; 3.0's boolean exclusive bounds translated;
allOf merged into one object where it can be; documentation and anchor keywords dropped;
formats kept, with a pattern where RE2 matches them (apps/common/schemas/patterns.py); `closed`
and `strict` give the two forms a version's parameters take.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from apps.common.schemas.patterns import pattern_problem

from .errors import Unsupported
from .markdown import markdown

# JSON Schema's own formats are kept; OpenAPI's (int32, byte, password...) say nothing a
# validator checks and are dropped.
_JSON_SCHEMA_FORMATS = frozenset(
    {"date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4",
     "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
     "relative-json-pointer", "regex"}
)
FORMAT_PATTERNS = {
    "date": r"^\d{4}-\d{2}-\d{2}$",
    "date-time": r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
    "time": r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "email": r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
}
# Keywords that describe documents or code generation, not the values a call may take.
_DROPPED = frozenset(
    {"discriminator", "xml", "externalDocs", "example", "examples", "nullable", "readOnly", "writeOnly",
     "deprecated", "title", "$schema", "$id", "$anchor", "$comment", "$defs", "definitions",
     "contentMediaType", "contentEncoding"}
)
_SCHEMA_ONE = ("items", "not", "contains", "propertyNames")
_SCHEMA_MANY = ("oneOf", "anyOf", "allOf", "prefixItems")


def _admits_null(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return node is not False
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in node:
        return None in node["enum"]
    if "const" in node:
        return node["const"] is None
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            return any(_admits_null(v) for v in node[key])
    return kind is None and not any(k in node for k in ("allOf", "not"))


def or_null(node: dict[str, Any]) -> dict[str, Any]:
    """`node` also admitting null: how a strict schema says "not given"."""
    if _admits_null(node):
        return node
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, str | list):
        out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "const" in out:
            out["enum"] = [out.pop("const"), None]
        return out
    for key in ("oneOf", "anyOf"):
        if isinstance(out.get(key), list):
            out[key] = [*out[key], {"type": "null"}]
            return out
    description = out.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [out, {"type": "null"}]}
    return {"description": description, **wrapped} if description else wrapped


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


# What an object part of an allOf may hold to be merged into one object with the others.
_MERGEABLE = frozenset({"type", "properties", "required", "additionalProperties", "description"}) | _DROPPED


def merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    """An allOf as one schema where it can be: a lone part merged into the node (OpenAPI
    3.0's way to give a `$ref` a description), parts that only describe an object's
    properties (how documents extend a model; nested allOf first) as one object: properties
    merged (a property in two parts must satisfy both), `required` united, closed if a
    part was closed — a part's `additionalProperties: false` closes the merged object, not
    the other parts' properties out of it. Any other allOf is left as written."""
    parts = node.get("allOf")
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        return node
    rest = {k: v for k, v in node.items() if k != "allOf"}
    parts = [merge_all_of(p) for p in parts]
    if len(parts) == 1 and not set(parts[0]) & (set(rest) - {"description", "title"}):
        return {**parts[0], **rest}
    if not all(_is_object(p) and _only_object(p) for p in parts) or not _only_object(rest) or \
            rest.get("type", "object") != "object":
        return node
    properties: dict[str, Any] = dict(rest.get("properties") or {})
    required: list[str] = list(rest.get("required") or [])
    closed = rest.get("additionalProperties") is False
    for part in parts:
        for name, schema in (part.get("properties") or {}).items():
            properties[name] = schema if name not in properties or properties[name] == schema else \
                {"allOf": [properties[name], schema]}
        required += [r for r in part.get("required") or [] if r not in required]
        closed = closed or part.get("additionalProperties") is False
    merged = {**rest, "type": "object", "properties": properties, "required": required}
    if "description" not in merged and (described := next((p for p in parts if "description" in p), None)):
        merged["description"] = described["description"]
    if closed:
        merged["additionalProperties"] = False
    return merged


def _only_object(schema: Mapping[str, Any]) -> bool:
    """Whether `schema` says no more than which properties an object has."""
    return all(key in _MERGEABLE or key.startswith("x-") for key in schema)


# JSON Schema keywords of 2019-09 and 2020-12 that name or reach schemas by anchor: the
# import expanded what they lead to (refs.py), so they would only dangle in a stored schema.
_ANCHORS = frozenset({"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary"})


def json_schema(node: Any, *, is_30: bool, request: bool = True) -> Any:
    """An OpenAPI schema object as a Draft 2020-12 schema ToolHub stores: 3.0's nullable and
    boolean exclusive bounds translated, 2019-09's array `items` as `prefixItems`, allOf
    merged where it can be, documentation and anchor keywords dropped, read-only
    properties left out of requests, formats kept with an RE2 pattern where one is known,
    and a pattern RE2 cannot run moved into the description. Raises Unsupported when the
    result is no valid schema (a keyword of the wrong type), naming where."""
    converted = _converted(node, is_30=is_30, request=request)
    if not isinstance(converted, dict | bool):
        return converted
    if problem := _schema_problem(json.dumps(converted, sort_keys=True)):
        raise Unsupported(f"a schema of it is not valid JSON Schema {problem}")
    return converted


_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)


@functools.lru_cache(maxsize=1024)
def _schema_problem(text: str) -> str:
    """Where and why the schema written `text` is not valid Draft 2020-12 ("" when it is).
    Cached: a document repeats its parameters (Stripe's `expand` in every operation), and
    checking one against the meta-schema costs milliseconds."""
    error = best_match(_META.iter_errors(json.loads(text)))
    if error is None:
        return ""
    return f"at {''.join(f'/{p}' for p in error.absolute_path) or 'its top'}: {error.message}"


def _declare_alternatives(out: dict[str, Any]) -> None:
    """Objects that must hold together — an object with properties and its oneOf/anyOf
    alternatives that add properties, or the parts of an allOf left unmerged — each
    declaring every name the others do (`{}`: the one that names it checks it). Open as the
    document wrote them, they accept each other's properties; closed by the import
    (`additionalProperties: false`), each would refuse the others' and no value would
    satisfy them all."""
    together = _objects(out.get("allOf"))
    if isinstance(out.get("properties"), dict):
        together = [out, *together, *_objects(out.get("oneOf")), *_objects(out.get("anyOf"))]
    if len(together) < 2:
        return
    names = dict.fromkeys(n for schema in together for n in schema["properties"])
    for schema in together:
        schema["properties"] = {name: schema["properties"].get(name, {}) for name in names}


def _objects(schemas: Any) -> list[dict[str, Any]]:
    """The schemas of a list that have properties."""
    listed = schemas if isinstance(schemas, list) else []
    return [s for s in listed if isinstance(s, dict) and isinstance(s.get("properties"), dict)]


def _converted(node: Any, *, is_30: bool, request: bool) -> Any:
    if not isinstance(node, dict):
        return node
    node = merge_all_of(node)
    out: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in _DROPPED or key in _ANCHORS or key.startswith("x-"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: _converted(sub, is_30=is_30, request=request)
                for name, sub in value.items()
                if not (request and isinstance(sub, dict) and sub.get("readOnly"))
            }
        elif key == "items" and isinstance(value, list):
            out["prefixItems"] = [_converted(sub, is_30=is_30, request=request) for sub in value]
        elif key == "additionalItems" and isinstance(node.get("items"), list):
            out["items"] = _converted(value, is_30=is_30, request=request)
        elif key in ("additionalProperties", *_SCHEMA_ONE) and isinstance(value, dict):
            out[key] = _converted(value, is_30=is_30, request=request)
        elif key in _SCHEMA_MANY and isinstance(value, list):
            out[key] = [_converted(sub, is_30=is_30, request=request) for sub in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and bound in node:
                out[key] = node[bound]
        elif key in ("minimum", "maximum") and node.get(f"exclusive{key.capitalize()}") is True:
            continue
        elif key == "format":
            if isinstance(value, str) and value in _JSON_SCHEMA_FORMATS:
                out[key] = value
                if value in FORMAT_PATTERNS and "pattern" not in node:
                    out["pattern"] = FORMAT_PATTERNS[value]
        elif key == "pattern" and isinstance(value, str) and pattern_problem(value):
            notes.append(f"Must match the regular expression {value} (not checked by ToolHub).")
        elif key == "description" and isinstance(value, str):
            out[key] = markdown(value)
        elif key in ("enum", "required") and not isinstance(value, list):
            raise Unsupported(f"a schema of it has {key} {value!r}, which is not a list.")
        else:
            out[key] = value
    if isinstance(out.get("properties"), dict) and "required" in out:
        # What is not a name is kept, for the meta-schema check to name it.
        out["required"] = [r for r in out["required"] if not isinstance(r, str) or r in out["properties"]]
    _declare_alternatives(out)
    if is_30 and node.get("nullable") is True:
        out = or_null(out)
    if notes:
        out["description"] = " ".join([out.get("description", ""), *notes]).strip()
    return out


def strict(node: Any) -> Any:
    """Every object with properties closed (`additionalProperties: false` unless it says
    otherwise) and listing every property in `required`, an optional one admitting null."""
    return _closing(node, require_all=True)


def closed(node: Any) -> Any:
    """Every object with properties closed (`additionalProperties: false` unless it says
    otherwise), its `required` as written: optional properties stay optional."""
    return _closing(node, require_all=False)


def _closing(node: Any, *, require_all: bool) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties", *_SCHEMA_ONE):
        if isinstance(out.get(key), dict):
            out[key] = _closing(out[key], require_all=require_all)
    for key in _SCHEMA_MANY:
        if isinstance(out.get(key), list):
            out[key] = [_closing(sub, require_all=require_all) for sub in out[key]]
    if isinstance(out.get("properties"), dict):
        required = [r for r in out.get("required") or [] if r in out["properties"]]
        out["properties"] = {
            name: _closing(sub, require_all=require_all)
            if name in required or not require_all or not isinstance(sub, dict)
            else or_null(_closing(sub, require_all=require_all))
            for name, sub in out["properties"].items()
        }
        if require_all:
            out["required"] = [*required, *(n for n in out["properties"] if n not in required)]
        elif required or "required" in out:
            out["required"] = required
        out.setdefault("additionalProperties", False)
    return out
