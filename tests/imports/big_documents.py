"""OpenAPI documents built for the tests of big imports: as many operations as asked, padded
to the size asked."""

from __future__ import annotations

import json
from typing import Any


def many_operations(count: int, *, description_bytes: int = 0, padding_bytes: int = 0,
                    without: tuple[int, ...] = ()) -> bytes:
    """A 3.0 document of `count` GET operations (getItem0, getItem1…, but those of `without`),
    each with a path and a query parameter, described in about `description_bytes`, with an
    `x-padding` string of `padding_bytes` at the top."""
    text = ("Reads one item of the catalog. " * (description_bytes // 31 + 1))[:description_bytes]
    paths: dict[str, Any] = {
        f"/items{n}/{{item_id}}": {"get": {
            "operationId": f"getItem{n}", "summary": f"Get an item of list {n}", "description": text,
            "parameters": [
                {"name": "item_id", "in": "path", "required": True, "description": "The item.",
                 "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "description": "At most this many.",
                 "schema": {"type": "integer", "minimum": 1}},
            ],
            "responses": {"200": {"description": "The item."}},
        }}
        for n in range(count) if n not in without
    }
    document = {"openapi": "3.0.3", "info": {"title": "Items", "version": "1"},
                "servers": [{"url": "https://items.example.com"}], "paths": paths,
                **({"x-padding": "p" * padding_bytes} if padding_bytes else {})}
    return json.dumps(document).encode()
