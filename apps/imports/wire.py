"""How an OpenAPI operation's parameters and request body go on the wire, in the terms of
the http executor's config (docs/http-tools.md): a parameter's serialization entry, the
media type a body is sent as and its encoding object, and the body members whose null the
document accepts. Pure; drafts.py makes the draft from these.

A serialization entry is written only where the document asks for something the executor
does not do without one (docs/http-tools.md: a query array repeated, a query object as JSON
text, a path or header value as one scalar), so a document that says nothing special keeps
the short config it had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.common import json_pointer

from .errors import Unsupported

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
TEXT = "text/plain"
# OpenAPI's default style per location; explode defaults to true for form only.
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
_OBJECT_KINDS = frozenset({"object", "array"})


def value_kinds(schema: Any) -> set[str]:
    """The JSON types a (converted) schema's values may have; every type for a schema that
    does not say."""
    if not isinstance(schema, Mapping):
        return {"object", "array", "string", "number", "integer", "boolean", "null"}
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    if "properties" in schema:
        return {"object"}
    if "items" in schema:
        return {"array"}
    branches = [b for key in ("oneOf", "anyOf") for b in schema.get(key) or () if isinstance(b, Mapping)]
    if branches:
        return set().union(*(value_kinds(b) for b in branches))
    if "enum" in schema and isinstance(schema["enum"], list):
        return {_json_type(v) for v in schema["enum"]}
    return value_kinds(None)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def serialization(parameter: Mapping[str, Any], location: str, schema: Any, argument: str) -> dict[str, Any]:
    """The serialization entry of one path, query, header or cookie parameter: empty when the
    executor's behaviour without one is what the document says."""
    entry: dict[str, Any] = {}
    if location == "query" and parameter["name"] != argument:
        entry["name"] = parameter["name"]
    default = _DEFAULT_STYLE[location]
    style = str(parameter.get("style") or default)
    explode = bool(parameter.get("explode", _explodes(style)))
    kinds = value_kinds(schema) - {"null"}
    structured = bool(kinds & _OBJECT_KINDS)
    # Without an entry: a query array is repeated (form, exploded) and a query object is sent
    # as JSON text; a path or header value must be one scalar. A parameter given by `content`
    # (a media type instead of a style) is that JSON text already.
    if "content" not in parameter and (
        (location == "path" and style != default)
        or (structured and not (location == "query" and kinds & _OBJECT_KINDS == {"array"}
                                and (style, explode) == ("form", True)))
    ):
        entry["style"], entry["explode"] = style, explode
    if location == "query" and parameter.get("allowReserved") is True:
        entry["allow_reserved"] = True
    if location == "path" and parameter.get("x-multi-segment") is True:
        entry["multi_segment"] = True
    return entry


def non_empty(parameter: Mapping[str, Any], location: str, schema: Any) -> Any:
    """`schema` with `minLength: 1` where the document forbids an empty value: a path segment
    cannot be empty, and OpenAPI's `allowEmptyValue` defaults to false for the others, so
    `?ending_before=` or a path argument `''` is a request the upstream refuses. Only a
    string-typed schema that says nothing of its length or its values (an enum, a const)
    gets it. Unless the parameter is JSON text (`content`), it carries what a request can
    (carried): no empty key in a map, and an item in a required array or object."""
    if "content" not in parameter:  # given by a media type, it is JSON text: any value fits
        schema = carried_member(schema, is_required=location == "path" or bool(parameter.get("required")))
    if location != "path" and parameter.get("allowEmptyValue") is True:
        return schema
    if not isinstance(schema, dict) or any(k in schema for k in ("minLength", "enum", "const")):
        return schema
    if value_kinds(schema) - {"null"} != {"string"}:
        return schema
    return {**schema, "minLength": 1}


# Where a value's parts are (not `not`: narrowing what it refuses would widen what it accepts).
_SUBSCHEMAS = ("items", "additionalProperties", "contains")
_SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")


# The keys a map outside a JSON body can carry: not empty (`metadata[]=x` is an array's item)
# and no bracket (`metadata[a[b]]` reads as nesting); the executor refuses others.
MAP_KEYS = {"minLength": 1, "pattern": r"^[^\[\]]*$"}


def carried(schema: Any) -> Any:
    """`schema` narrowed to the values a request outside a JSON body can carry, at any
    depth: there a key is written into the request (`metadata[order_id]=ORD-1`, `k=v`), so
    a map's keys (an object whose `additionalProperties` is not false) cannot be empty —
    `metadata[]=x` is an array's item to the upstream (Stripe) —, and an empty array or
    object writes nothing, so a required one needs an item (required_carried)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SUBSCHEMAS:
        if isinstance(out.get(key), dict):
            out[key] = carried(out[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [carried(sub) for sub in out[key]]
    if isinstance(out.get("properties"), dict):
        required = out.get("required") or ()
        out["properties"] = {name: carried_member(sub, is_required=name in required)
                             for name, sub in out["properties"].items()}
    kind = out.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    # an object with properties and nothing said of others is closed by the import (schemas.closed)
    open_keys = out.get("additionalProperties", "properties" not in out)
    if is_object and open_keys is not False and "propertyNames" not in out:
        out["propertyNames"] = dict(MAP_KEYS)
    return out


def carried_member(schema: Any, *, is_required: bool) -> Any:
    """A member of an object outside a JSON body, carried, and not empty when required."""
    return required_carried(carried(schema)) if is_required else carried(schema)


def required_carried(schema: Any) -> Any:
    """A required array or object outside a JSON body, with at least one item or member:
    empty, it writes nothing, and the upstream finds the required value missing."""
    if not isinstance(schema, dict):
        return schema
    kinds = value_kinds(schema) - {"null"}
    if kinds == {"array"} and "minItems" not in schema:
        return {**schema, "minItems": 1}
    if kinds == {"object"} and "minProperties" not in schema:
        return {**schema, "minProperties": 1}
    return schema


def _explodes(style: str) -> bool:
    """OpenAPI's default explode: true for form; deepObject is defined exploded only."""
    return style in ("form", "deepObject")


def _base_type(media_type: str) -> str:
    return media_type.split(";")[0].strip().lower()


def chosen_media(content: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The media type a body is sent as (JSON when offered, then a form, multipart, text) and
    its media type object. Raises Unsupported for a body ToolHub cannot send (a file, an
    octet stream, XML)."""
    offered = {_base_type(t): (m if isinstance(m, Mapping) else {}) for t, m in content.items()}
    for wanted in (JSON, FORM, MULTIPART):
        for media_type, media in offered.items():
            if media_type == wanted or (wanted == JSON and media_type.endswith("+json")):
                return wanted, media
    texts = [t for t in offered if t.startswith("text/") or t == "*/*"]
    for media_type in sorted(texts, key=lambda t: (t != TEXT, t == "*/*")):
        schema = offered[media_type].get("schema") or {"type": "string"}
        if isinstance(schema, Mapping) and schema.get("type") == "string" and not is_binary(schema):
            # sent as text/plain, which text/x-markdown and the like are
            return TEXT, offered[media_type]
    raise Unsupported(
        f"its request body is {', '.join(offered) or 'of no media type'}; ToolHub sends JSON, form "
        "(urlencoded or multipart, without files) and text bodies, not files or octet streams."
    )


@dataclass(frozen=True)
class Body:
    """A request body as the arguments that fill it and the config keys that send it."""

    properties: dict[str, Any]
    required: list[str]
    config: dict[str, Any]
    # What the request leaves out, as a version's source["dropped"] records it (docs/lint.md).
    dropped: tuple[dict[str, str], ...] = ()


def request_body(
    media_type: str, media: Mapping[str, Any], written: Mapping[str, Any], converted: Any, *,
    is_required: bool, argument: str, description: str,
) -> Body:
    """The body sent as `media_type` (chosen_media) whose document schema is `written` (its
    allOf merged) and `converted` as ToolHub stores it: an object's members as arguments of
    their own, any other value (an array, a string, a text) as the one `argument` that is
    the body. A multipart body's file fields are left out; raises Unsupported when one is
    required."""
    config: dict[str, Any] = {} if media_type == JSON else {"body_media_type": media_type}
    members = converted.get("properties") if isinstance(converted, Mapping) else None
    if media_type == TEXT or not isinstance(members, Mapping):
        if media_type in (FORM, MULTIPART):
            raise Unsupported(f"its {media_type} body is not an object of named fields.")
        if description and "description" not in converted:
            converted = {"description": description, **converted}
        config["body"] = {"argument": argument}
        if pointers := null_pointers(converted):
            config["send_null"] = pointers
        return Body(properties={argument: converted}, required=[argument] if is_required else [],
                    config=config)
    # The members the schema requires stay required when the document forgot to mark the body
    # required (Twilio's CreateCall needs To and From): a call without them fails.
    required = [name for name in converted.get("required") or () if name in members]
    dropped: tuple[dict[str, str], ...] = ()
    if media_type == MULTIPART:
        files = {name for name, schema in (written.get("properties") or {}).items() if is_binary(schema)}
        if needed := [name for name in required if name in files]:
            raise Unsupported(
                f"its multipart body needs the file field {', '.join(needed)}; ToolHub does not upload files."
            )
        dropped = tuple({"what": f"the file field {name} of the multipart body",
                         "reason": "ToolHub does not upload files"} for name in members if name in files)
        members = {name: schema for name, schema in members.items() if name not in files}
    if media_type != JSON:
        members = {name: carried_member(schema, is_required=name in required)
                   for name, schema in members.items()}
    config["body"] = list(members)
    if media_type != JSON and (encoding := body_encoding(media_type, media.get("encoding"), members)):
        config["body_encoding"] = encoding
    if pointers := null_pointers({"properties": members}):
        config["send_null"] = pointers
    return Body(properties=dict(members), required=required, config=config,
                dropped=dropped)


def is_binary(schema: Any) -> bool:
    """Whether a document's (unconverted) schema is a file: `format: binary` (3.0), a
    `contentMediaType` other than text (3.1), or an array of those."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("format") == "binary":
        return True
    media = schema.get("contentMediaType")
    if isinstance(media, str) and not media.startswith("text/") and "contentEncoding" not in schema:
        return True
    return schema.get("type") == "array" and is_binary(schema.get("items"))


def body_encoding(media_type: str, encoding: Any, properties: Mapping[str, Any]) -> dict[str, Any]:
    """The body_encoding config of a form or multipart body: OpenAPI's encoding object, for
    the properties that are arguments. A form's array or object property the object does not
    name is written as OpenAPI's default for it (form, exploded: `MediaUrl=a&MediaUrl=b`, as
    Twilio takes it), not left to the executor's bracket notation, which is Stripe's."""
    written_for = encoding if isinstance(encoding, Mapping) else {}
    out: dict[str, Any] = {}
    for name, schema in properties.items():
        written = written_for.get(name)
        written = written if isinstance(written, Mapping) else {}
        entry: dict[str, Any] = {}
        structured = media_type == FORM and bool(value_kinds(schema) & _OBJECT_KINDS)
        if "style" in written or "explode" in written or structured:
            style = str(written.get("style", "form"))
            entry["style"], entry["explode"] = style, bool(written.get("explode", _explodes(style)))
        if isinstance(written.get("contentType"), str):
            entry["content_type"] = written["contentType"]
        if written.get("allowReserved") is True:
            entry["allow_reserved"] = True
        if entry:
            out[name] = entry
    return out


def says_null(schema: Any) -> bool:
    """Whether a converted schema names null among its values (a type, an enum member, a
    branch): what the document wrote as nullable or `type: null`. A schema that says nothing
    about types does not count: the document did not say the upstream accepts null."""
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    if "const" in schema and schema["const"] is None:
        return True
    return any(says_null(b) for key in ("oneOf", "anyOf") for b in schema.get(key) or ())


def null_pointers(schema: Any, prefix: str = "") -> list[str]:
    """JSON pointers (under `prefix`) of the members of an object schema, at any depth of
    nested objects and arrays (an array's items written '-'), whose null the document
    accepts."""
    if not isinstance(schema, Mapping):
        return []
    members = [(f"{prefix}/-", schema["items"])] if isinstance(schema.get("items"), Mapping) else []
    if isinstance(schema.get("properties"), Mapping):
        members += [(f"{prefix}/{json_pointer.escaped(name)}", member)
                    for name, member in schema["properties"].items()]
    found = []
    for at, member in members:
        if says_null(member):
            found.append(at)
        found += null_pointers(member, at)
    return found
