"""OpenAPI documents written to hurt an importer, each with the place its refusal must name.

Each builds the bytes an attacker (or a careless generator) would upload: a document whose
`$ref`s expand exponentially, one nested past any parser's stack, one with ten thousand
operations, and values PostgreSQL or Python cannot hold (NUL, lone surrogates, a 5,001-digit
integer, NaN and infinities).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def document(paths: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A small valid 3.1 document with one GET operation, `extra` merged in at the top."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Hostile", "version": "1"},
        "servers": [{"url": "https://hostile.example.com"}],
        "paths": paths if paths is not None else {"/items": {"get": {
            "operationId": "listItems", "responses": {"200": {"description": "The items."}},
        }}},
        **extra,
    }


def _body_of(schema_ref: str) -> dict[str, Any]:
    return {"/items": {"post": {
        "operationId": "createItem",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": schema_ref}}}},
        "responses": {"200": {"description": "Made."}},
    }}}


def ref_bomb(levels: int) -> bytes:
    """`levels` schemas, each an object of two properties referencing the previous one: the
    body's schema expands to 2**levels copies of the first."""
    schemas: dict[str, Any] = {"S0": {"type": "object", "properties": {"a": {"type": "string"}}}}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/components/schemas/S{level - 1}"}
        schemas[f"S{level}"] = {"type": "object", "properties": {"l": below, "r": below}}
    return json.dumps(
        document(_body_of(f"#/components/schemas/S{levels}"), components={"schemas": schemas}),
        separators=(",", ":"),
    ).encode()


def shared_body(operations: int) -> bytes:
    """`operations` operations whose bodies are the same schema of ten properties, by $ref:
    each small, together larger."""
    schema = {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(10)}}
    post = _body_of("#/components/schemas/Item")["/items"]["post"]
    paths = {f"/items/{n}": {"post": {**post, "operationId": f"createItem{n}"}} for n in range(operations)}
    return json.dumps(document(paths, components={"schemas": {"Item": schema}})).encode()


def ref_chain(levels: int) -> bytes:
    """`levels` schemas, each an object whose one property is the previous one: a schema
    `levels` objects deep, written flat."""
    schemas: dict[str, Any] = {"S0": {"type": "string"}}
    for level in range(1, levels + 1):
        schemas[f"S{level}"] = {"type": "object",
                                "properties": {"n": {"$ref": f"#/components/schemas/S{level - 1}"}}}
    return json.dumps(document(_body_of(f"#/components/schemas/S{levels}"),
                               components={"schemas": schemas})).encode()


def nested_schema(levels: int) -> bytes:
    """One schema written `levels` objects deep."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"n": schema}}
    return json.dumps(document(components={"schemas": {"Deep": schema}})).encode()


def many_operations(count: int) -> bytes:
    answers = {"200": {"description": "ok"}}
    paths = {f"/items/{n}": {"get": {"operationId": f"getItem{n}", "responses": answers}}
             for n in range(count)}
    return json.dumps(document(paths)).encode()


def with_schema_value(text: str) -> bytes:
    """A JSON document whose schema `X` has `maximum: <text>`, `text` as written."""
    marker = "__MAXIMUM__"
    written = json.dumps(document(components={"schemas": {"X": {"type": "integer", "maximum": marker}}}))
    return written.replace(f'"{marker}"', text).encode()


def with_operation_id(escaped: str) -> bytes:
    """A JSON document whose operationId is the JSON string literal `escaped`."""
    return json.dumps(document()).replace('"listItems"', f'"{escaped}"').encode()


YAML_HEAD = "openapi: 3.1.0\ninfo: {title: Hostile, version: '1'}\npaths: {}\n"


@dataclass(frozen=True)
class Hostile:
    """A document and what its refusal must say (the place, and the limit where one is hit)."""

    text: bytes
    says: tuple[str, ...]


DEPTH = "TOOLHUB_IMPORT_MAX_DEPTH"

HOSTILE: dict[str, Hostile] = {
    "100k-deep JSON": Hostile(
        b'{"openapi": "3.1.0", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        ("line 1, column", DEPTH),
    ),
    "100k-deep YAML": Hostile(
        (YAML_HEAD + "x: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(), ("line 4", DEPTH),
    ),
    "a 300-level schema of $refs": Hostile(
        ref_chain(300), ("/paths/~1items/post/requestBody/content/application~1json/schema", DEPTH),
    ),
    "a 300-level schema written out": Hostile(
        nested_schema(300), ("/components/schemas/Deep/properties/n", DEPTH),
    ),
    "a 5,001-digit integer": Hostile(
        with_schema_value("1" * 5001), ("/components/schemas/X/maximum", "an integer of 5001 digits"),
    ),
    "a 5,001-digit integer in YAML": Hostile(
        (YAML_HEAD + "components: {schemas: {X: {type: integer, maximum: " + "1" * 5001 + "}}}\n").encode(),
        ("/components/schemas/X/maximum", "an integer of 5001 digits"),
    ),
    "an operationId with a lone surrogate": Hostile(
        with_operation_id("list\\ud800Items"), ("/paths/~1items/get/operationId", "lone surrogate"),
    ),
    "NUL in an operationId": Hostile(
        with_operation_id("list\\u0000Items"), ("/paths/~1items/get/operationId", "NUL"),
    ),
    "NUL in the title": Hostile(
        json.dumps(document(info={"title": "Shop\x00", "version": "1"})).encode(), ("/info/title", "NUL"),
    ),
    "NaN": Hostile(with_schema_value("NaN"), ("/components/schemas/X/maximum", "not finite")),
    "Infinity": Hostile(with_schema_value("Infinity"), ("/components/schemas/X/maximum", "not finite")),
    "-Infinity": Hostile(with_schema_value("-Infinity"), ("/components/schemas/X/maximum", "not finite")),
    "YAML .inf": Hostile(
        (YAML_HEAD + "components: {schemas: {X: {type: integer, maximum: .inf}}}\n").encode(),
        ("/components/schemas/X/maximum", "not finite"),
    ),
    "a $ref bomb of 16 levels": Hostile(
        ref_bomb(16), ("/paths/~1items/post", "createItem", "TOOLHUB_IMPORT_MAX_SCHEMA_NODES"),
    ),
    "10,000 operations": Hostile(
        many_operations(10_000), ("10000 operations", "TOOLHUB_IMPORT_MAX_OPERATIONS"),
    ),
}
