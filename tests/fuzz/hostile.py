"""The hostile corpus: JSON that parses, or nearly does, and still hurts a Python server.

One place for every test that sends it. Values are raw JSON text, because the worst of them
cannot be built with json.dumps: an integer of 5,000 digits (Python refuses to convert it),
a lone surrogate (not a Unicode character), 1e400 (infinite once parsed). `embed` puts such
text anywhere in a request body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from apps.common.parsers import MAX_BODY_DEPTH
from apps.gateway.pipeline.parse import MAX_DEPTH

HUGE_INTEGER = "9" * 5000
BODY_LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def nested(levels: int, open_: str = "[", close: str = "]") -> str:
    return open_ * levels + close * levels


def nested_objects(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


# Hostile values, for any field of a request envelope and any argument.
VALUES: dict[str, str] = {
    "a huge integer": HUGE_INTEGER,
    "a huge negative integer": "-" + HUGE_INTEGER,
    "an integer past 2**53": "9007199254740993",
    "a huge float": "1e400",
    "a huge negative float": "-1e400",
    "a float of 5000 digits": "0." + "1" * 5000,
    "a lone high surrogate": '"\\ud800"',
    "a lone low surrogate after text": '"abc\\udfff"',
    "a reversed surrogate pair": '"\\ude00\\ud83d"',
    "a NUL": '"a\\u0000b"',
    "arrays nested 40 levels": nested(40),
    "objects nested 40 levels": nested_objects(40),
    "an object": '{"a": 1}',
    "a string of 10000 characters": json.dumps("x" * 10_000),
}

# What the test tools' `query` (a string) takes as it is.
HARMLESS_QUERIES = {"a string of 10000 characters"}


@dataclass(frozen=True)
class Arguments:
    """Hostile tool arguments, as the JSON text a model would write."""

    text: str
    refused: bool = True  # a tool must never run with them, however they travel
    collapses_in_body: bool = False  # inside a parsed request body it is no longer hostile

    @property
    def is_object(self) -> bool:
        return self.text.startswith("{")

    @property
    def fits_a_body(self) -> bool:
        """Whether a request body can carry it as an object without being refused as a whole."""
        return self.text.count("[") + self.text.count("{") < MAX_BODY_DEPTH - 8


ARGUMENTS: dict[str, Arguments] = {
    **{
        f"{name} as a value": Arguments(f'{{"query": {text}}}', refused=name not in HARMLESS_QUERIES)
        for name, text in VALUES.items()
    },
    "a lone surrogate in a key": Arguments('{"query": "a", "\\udc00": "x"}'),
    "a lone surrogate in a nested value": Arguments('{"query": "a", "filters": {"tags": ["ok", "\\ud800"]}}'),
    "a huge integer in a nested array": Arguments(f'{{"query": "a", "ids": [1, 2, {HUGE_INTEGER}]}}'),
    "a NUL in a key": Arguments('{"query": "a", "qu\\u0000ery": "b"}'),
    "duplicate keys": Arguments('{"query": "a", "query": "b"}', collapses_in_body=True),
    "a duplicate key that is a lone surrogate": Arguments(
        '{"query": "a", "\\ud800": 1, "\\ud800": 2}', collapses_in_body=True
    ),
    f"arrays nested {MAX_DEPTH + 1} levels": Arguments(f'{{"query": {nested(MAX_DEPTH)}}}'),
    "arrays nested 10000 levels": Arguments(f'{{"query": {nested(10_000)}}}'),
    "objects nested 10000 levels": Arguments(f'{{"query": {nested_objects(10_000)}}}'),
    "a string near the body limit": Arguments(
        json.dumps({"query": "x" * (BODY_LIMIT - 4096)}), refused=False
    ),
    "a huge integer instead of an object": Arguments(HUGE_INTEGER),
    "a huge float instead of an object": Arguments("1e400"),
    "a lone surrogate instead of an object": Arguments('"\\ud800"'),
    "an array instead of an object": Arguments("[1, 2]"),
    "null instead of an object": Arguments("null"),
}

# Whole bodies, sent as they are to every endpoint that takes one.
BODIES: dict[str, bytes] = {
    "invalid UTF-8": b'{"task_id": "t-\xff\xfe"}',
    "a surrogate encoded as UTF-8 bytes": b'{"task_id": "t-\xed\xa0\x80"}',
    "a UTF-8 byte order mark": b'\xef\xbb\xbf{"task_id": "t-1"}',
    "UTF-16": '{"task_id": "t-1"}'.encode("utf-16"),
    "a raw NUL byte": b'{"task_id": "t-\x00"}',
    "an array": b"[]",
    "an array of objects": b'[{"task_id": "t-1"}]',
    "a string": b'"task_id"',
    "a number": b"1",
    "a huge integer": HUGE_INTEGER.encode(),
    "a huge float": b"1e400",
    "NaN": b"NaN",
    "true": b"true",
    "null": b"null",
    "a lone surrogate": b'"\\ud800"',
    "a lone surrogate as a key": b'{"\\ud800": 1}',
    "a NUL as a key": b'{"\\u0000": 1}',
    "a huge integer as a key's value": b'{"task_id": "t-1", "x": ' + HUGE_INTEGER.encode() + b"}",
    "arrays nested 100000 levels": nested(100_000).encode(),
    "objects nested 100000 levels": nested_objects(100_000).encode(),
    "an unclosed nesting of 100000 levels": b"[" * 100_000,
    "duplicate keys": b'{"task_id": "t-1", "task_id": "t-2"}',
    "a string near the body limit": json.dumps({"task_id": "x" * (BODY_LIMIT - 100)}).encode(),
}

# Each endpoint's request envelope with a good call to the `finder` tool, and the places in
# it where a hostile value goes (a path of keys and indexes).
GOOD_ARGUMENTS = {"query": "a"}
ENVELOPES: dict[str, tuple[dict[str, Any], list[tuple[str | int, ...]]]] = {
    "/api/v1/invoke": (
        {"task_id": "t-1", "call": {"id": "call_1", "name": "finder", "arguments": GOOD_ARGUMENTS}},
        [("task_id",), ("call", "id"), ("call", "name"), ("call",), ("toolset",), ("phase",),
         ("dry_run",), ("wait_s",)],
    ),
    "/api/v1/invoke/batch": (
        {"task_id": "t-1", "calls": [{"id": "call_1", "name": "finder", "arguments": GOOD_ARGUMENTS}]},
        [("task_id",), ("calls", 0, "id"), ("calls", 0, "name"), ("calls", 0), ("calls",),
         ("budget_chars",)],
    ),
    "/api/v1/adapters/openai": (
        {"task_id": "t-1", "message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "finder", "arguments": "{}"}},
        ]}},
        [("task_id",), ("message", "role"), ("message", "tool_calls", 0, "id"),
         ("message", "tool_calls", 0, "type"), ("message", "tool_calls", 0, "function", "name"),
         ("message", "tool_calls", 0, "function")],
    ),
    "/api/v1/adapters/anthropic": (
        {"task_id": "t-1", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "call_1", "name": "finder", "input": GOOD_ARGUMENTS},
        ]}},
        [("task_id",), ("message", "role"), ("message", "content", 0, "text"),
         ("message", "content", 0), ("message", "content", 1, "id"),
         ("message", "content", 1, "name"), ("message", "content", 1, "type")],
    ),
    "/api/v1/sessions": (
        {"subject": "u-1", "attributes": {"plan": "pro"}, "ttl_s": 60},
        [("subject",), ("attributes",), ("attributes", "plan"), ("ttl_s",)],
    ),
    "/mcp": (
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "finder", "arguments": GOOD_ARGUMENTS}},
        [("jsonrpc",), ("id",), ("method",), ("params",), ("params", "name"),
         ("params", "arguments"), ("params", "_meta")],
    ),
}


def embed(template: Any, path: tuple[str | int, ...], text: str) -> bytes:
    """`template` as a JSON body with the raw JSON `text` at `path` (added when missing)."""
    placeholder = "\u2603hostile\u2603"
    body = json.loads(json.dumps(template))
    node = body
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = placeholder
    encoded = json.dumps(body, ensure_ascii=False)
    assert encoded.count(f'"{placeholder}"') == 1
    return encoded.replace(f'"{placeholder}"', text).encode("utf-8", "surrogatepass")
