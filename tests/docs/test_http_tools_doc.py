"""The examples of docs/http-tools.md are sound versions and send what the page says. Pure."""

from __future__ import annotations

import json
import re
from pathlib import Path

from apps.catalog.definitions import validate_definition
from apps.catalog.lint import ToolDefinition, lint_tool
from apps.gateway.executors.http.mapping import request_parts

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "http-tools.md").read_text()
EXAMPLES = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", PAGE, re.DOTALL)]


def test_the_read_example_is_sound_lint_clean_and_sends_the_request_shown():
    example = EXAMPLES[0]
    parameters, config = example["parameters"], example["executor_config"]

    errors = validate_definition(
        parameters=parameters, normalizers={}, context_bindings={}, rules=[], executor="http",
        executor_config=config, approval={},
    )
    findings = lint_tool(ToolDefinition(
        name="list_refunds", description="Lists an order's refunds. At most 100. Not for refunding.",
        parameters=parameters, executor="http", executor_config=config,
    ))
    parts = request_parts(
        config, {"order_id": "ORD-000042", "expand": ["items", "payments"], "limit": None, "channel": "web"},
        idempotency_key=None,
    )

    assert errors == {} and [f.code for f in findings] == ["session-unscoped-path"]
    assert "session-unscoped-path" in PAGE
    assert "GET https://orders.example.com/v2/orders/ORD-000042/refunds?expand=items&expand=payments" in PAGE
    assert (parts.method, parts.path, parts.query) == (
        "GET", "/orders/ORD-000042/refunds", (("expand", "items"), ("expand", "payments"))
    )
    assert parts.headers == {"X-Request-Channel": "web", "Accept": "application/json"}


def test_the_write_example_sends_the_rest_with_the_key_in_its_header():
    parameters = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount_cents": {"type": "integer"}},
        "required": ["order_id", "amount_cents"],
        "additionalProperties": False,
    }
    config = EXAMPLES[1]

    errors = validate_definition(
        parameters=parameters, normalizers={}, context_bindings={}, rules=[], executor="http",
        executor_config=config, approval={},
    )
    parts = request_parts(config, {"order_id": "ORD-000042", "amount_cents": 1250}, idempotency_key="k")

    assert errors == {}
    assert (parts.path, parts.content, parts.headers["X-Request-Id"]) == (
        "/orders/ORD-000042/refunds", b'{"amount_cents":1250}', "k"
    )


STYLE_ROW = re.compile(r"^\| `(\w+)` \| (true|false) \| `(.*?)` \| `(.*?)` \| `(.*?)` \|$", re.MULTILINE)


def test_the_style_table_is_what_the_mapping_writes():
    rows = STYLE_ROW.findall(PAGE.replace("\\|", "|"))
    values = ("blue", ["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150})

    assert len(rows) == 11
    for style, explode, *expected in rows:
        rule = {"color": {"style": style, "explode": explode == "true"}}
        if style in ("simple", "label", "matrix"):
            config = {"url": "https://x.example", "method": "GET", "path": "/{color}", "serialization": rule}
            written = [request_parts(config, {"color": v}, idempotency_key=None).path[1:] for v in values]
        else:
            config = {"url": "https://x.example", "method": "GET", "query": ["color"], "serialization": rule}
            written = ["&".join(f"{k}={v}" for k, v in request_parts(
                config, {"color": value}, idempotency_key=None).query) for value in values]
        assert written == expected, (style, explode)
