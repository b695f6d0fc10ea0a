"""The http executor config's wire keys (docs/http-tools.md "Serialization"): their JSON Schema
and the checks that need the parameters schema. Pure; definitions.py runs them on every save.

The styles are OpenAPI 3.0/3.1's (§"Style Values"), allowed where OpenAPI allows them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apps.common import json_pointer

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
HEADER_NAME = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"  # an RFC 9110 token
STYLES_BY_LOCATION = {
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject"),
    "header": ("simple",),
    "cookie": ("form",),
}
DEFAULT_STYLES = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
# The styles a form body's property may have (OpenAPI's encoding object: those of the query).
BODY_ENCODING_STYLES = STYLES_BY_LOCATION["query"]
JSON_MEDIA_TYPE = "application/json"
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
MULTIPART_MEDIA_TYPE = "multipart/form-data"
TEXT_MEDIA_TYPE = "text/plain"
BODY_MEDIA_TYPES = (JSON_MEDIA_TYPE, FORM_MEDIA_TYPE, MULTIPART_MEDIA_TYPE, TEXT_MEDIA_TYPE)
# Cookie names that carry a session or a credential: those come from the upstream's credential,
# never from an argument a model fills.
CREDENTIAL_COOKIE = re.compile(
    r"sess|sid$|^sid|token|auth|csrf|xsrf|jwt|api[-_]?key|secret|passw|credential|login", re.IGNORECASE
)
_ARGUMENT = {"type": "string", "minLength": 1}

HTTP_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "pattern": "^https?://"},
        "url_setting": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
        "upstream": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"},
        "method": {"enum": list(HTTP_METHODS)},
        "path": {"type": "string"},
        "query": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "headers": {
            "type": "object",
            "propertyNames": {"pattern": HEADER_NAME},
            "additionalProperties": {"type": "string"},
        },
        "cookies": {
            "type": "object",
            "propertyNames": {"pattern": HEADER_NAME},
            "additionalProperties": _ARGUMENT,
        },
        "serialization": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "style": {"enum": sorted({s for styles in STYLES_BY_LOCATION.values() for s in styles})},
                    "explode": {"type": "boolean"},
                    "allow_reserved": {"type": "boolean"},
                    "multi_segment": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
        },
        "body": {
            "oneOf": [
                {"const": "rest"},
                {"type": "null"},
                {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                {
                    "type": "object",
                    "properties": {"argument": _ARGUMENT},
                    "required": ["argument"],
                    "additionalProperties": False,
                },
            ]
        },
        "body_media_type": {"enum": list(BODY_MEDIA_TYPES)},
        "body_encoding": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "style": {"enum": list(BODY_ENCODING_STYLES)},
                    "explode": {"type": "boolean"},
                    "allow_reserved": {"type": "boolean"},
                    "content_type": {"type": "string", "minLength": 1},
                },
                "additionalProperties": False,
            },
        },
        "send_null": {
            "type": "array",
            "items": {"type": "string", "pattern": r"^(/([^~]|~[01])*)*$"},
            "uniqueItems": True,
        },
        "response_pointer": {"type": "string", "pattern": r"^(/([^~]|~[01])*)*$"},
        "idempotency_header": {"type": "string", "pattern": HEADER_NAME},
        "status_path": {"type": "string"},
        "secret_ref": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
    },
    "oneOf": [{"required": ["url"]}, {"required": ["url_setting"]}, {"required": ["upstream"]}],
    "additionalProperties": False,
}


def locations_of(config: Mapping[str, Any], path_names: list[str]) -> dict[str, set[str]]:
    """Where the config puts each argument outside the body: path, query, header, cookie."""
    where: dict[str, set[str]] = {}
    for location, names in (
        ("path", path_names),
        ("query", config.get("query") or []),
        ("header", list((config.get("headers") or {}).values())),
        ("cookie", list((config.get("cookies") or {}).values())),
    ):
        for name in names:
            where.setdefault(name, set()).add(location)
    return where


def wire_problems(
    config: Mapping[str, Any], parameters: Mapping[str, Any], path_names: list[str]
) -> list[str]:
    """How the wire keys (serialization, cookies, body, body_media_type, body_encoding,
    send_null) disagree with the parameters schema or with OpenAPI's rules."""
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    where = locations_of(config, path_names)
    problems = [*_serialization_problems(config.get("serialization") or {}, where, properties)]
    cookies: Mapping[str, str] = config.get("cookies") or {}
    if missing := [name for name in cookies.values() if name not in properties]:
        problems.append(f"cookies names {', '.join(missing)}, which the parameters schema does not have.")
    if credential := [name for name in cookies if CREDENTIAL_COOKIE.search(name)]:
        problems.append(
            f"cookies cannot set {', '.join(credential)} from arguments: a session or credential "
            "cookie comes from the upstream's credential, never from what a model sends."
        )
    problems += _body_problems(config, properties, where)
    return problems


def _serialization_problems(
    serialization: Mapping[str, Mapping[str, Any]],
    where: Mapping[str, set[str]],
    properties: Mapping[str, Any],
) -> list[str]:
    problems = []
    for name, rule in serialization.items():
        if name not in properties:
            problems.append(f"serialization names {name}, which the parameters schema does not have.")
            continue
        if name not in where:
            problems.append(
                f"serialization names {name}, which the mapping does not put in the path, query, "
                "headers or cookies (a body property's form is body_encoding)."
            )
            continue
        for location in sorted(where[name]):
            style = rule.get("style", DEFAULT_STYLES[location])
            if style not in STYLES_BY_LOCATION[location]:
                problems.append(
                    f"serialization of {name}: style {style} is not one of a {location} parameter "
                    f"({', '.join(STYLES_BY_LOCATION[location])})."
                )
            if rule.get("style") == "deepObject" and rule.get("explode") is False:
                problems.append(f"serialization of {name}: deepObject is defined only with explode true.")
        for key, location in (("multi_segment", "path"), ("allow_reserved", "query")):
            if rule.get(key) and where[name] != {location}:
                problems.append(f"serialization of {name}: {key} applies to a {location} parameter only.")
        if "name" in rule and not where[name] <= {"query", "cookie"}:
            problems.append(
                f"serialization of {name}: name renames a query parameter or cookie only (a path "
                "placeholder is its argument's name, a header its key in headers)."
            )
    return problems


def _body_problems(
    config: Mapping[str, Any], properties: Mapping[str, Any], where: Mapping[str, set[str]]
) -> list[str]:
    body = config.get("body")
    media_type = config.get("body_media_type", JSON_MEDIA_TYPE)
    problems = []
    if isinstance(body, Mapping):
        if body["argument"] not in properties:
            return [f"body names {body['argument']}, which the parameters schema does not have."]
        root: Mapping[str, Any] = properties[body["argument"]]
        if not isinstance(root, Mapping):
            return problems
    elif isinstance(body, list):
        root = {
            "properties": {name: properties.get(name, {}) for name in body},
            "additionalProperties": False,
        }
    else:
        rest = {name: schema for name, schema in properties.items() if name not in where}
        root = {"properties": rest, "additionalProperties": False}
    if media_type == TEXT_MEDIA_TYPE and not isinstance(body, Mapping):
        problems.append('body_media_type text/plain needs body {"argument": name}: one string is the body.')
    encoding: Mapping[str, Any] = config.get("body_encoding") or {}
    if encoding and media_type not in (FORM_MEDIA_TYPE, MULTIPART_MEDIA_TYPE):
        problems.append(f"body_encoding applies to form and multipart bodies, not to {media_type}.")
    if unknown := [name for name in encoding if pointer_problem(root, [name])]:
        problems.append(f"body_encoding names {', '.join(unknown)}, which the body has no property of.")
    for pointer in config.get("send_null") or []:
        tokens = [json_pointer.unescaped(t) for t in pointer.split("/")[1:]]
        if reason := pointer_problem(root, tokens):
            problems.append(f"send_null {pointer!r} points nowhere in the body: {reason}.")
    return problems


def pointer_problem(schema: Mapping[str, Any], tokens: list[str]) -> str | None:
    """Why the JSON pointer `tokens` (an array's items written '-') names no member the schema
    allows, or None. Where the schema says nothing definite (a $ref, anyOf), it is trusted."""
    for token in tokens:
        if token == "-":
            items = schema.get("items")
            if isinstance(items, Mapping):
                schema = items
                continue
            types = schema.get("type")
            listed = [types] if isinstance(types, str) else types if isinstance(types, list) else []
            if listed and "array" not in listed:
                return "'-' stands for an array's items, and nothing there is an array"
            return None  # items described elsewhere (anyOf, $ref): trusted
        members = schema.get("properties")
        if isinstance(members, Mapping) and token in members and isinstance(members[token], Mapping):
            schema = members[token]
        elif isinstance(members, Mapping) and schema.get("additionalProperties") is False:
            return f"no property {token!r}"
        else:
            return None
    return None
