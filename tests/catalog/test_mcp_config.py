"""An mcp version's config is checked against its parameters on every save. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.definitions import validate_definition
from apps.catalog.lint import ToolDefinition, lint_tool

PARAMETERS = {
    "type": "object",
    "properties": {"shipment_id": {"type": "string", "description": "The shipment."}},
    "required": ["shipment_id"],
    "additionalProperties": False,
}


def config_problems(config: dict[str, Any], parameters: dict[str, Any] = PARAMETERS) -> list[str]:
    errors = validate_definition(
        parameters=parameters, normalizers={}, context_bindings={}, rules=[], executor="mcp",
        executor_config=config, approval={},
    )
    return errors.get("executor_config", [])


def test_a_write_naming_the_argument_its_key_goes_in_is_sound():
    assert config_problems(
        {"upstream": "shipping", "tool": "schedule_pickup", "idempotency_argument": "idempotency_key"}
    ) == []


def test_the_key_argument_cannot_be_one_the_model_fills():
    problems = config_problems(
        {"upstream": "shipping", "tool": "schedule_pickup", "idempotency_argument": "shipment_id"}
    )

    assert problems == [
        "idempotency_argument 'shipment_id' is also a property of the parameters schema: remove it there. "
        "ToolHub fills it with the call's idempotency key; a model never does."
    ]


def test_the_key_argument_is_a_plain_name():
    problems = config_problems({"upstream": "shipping", "tool": "t", "idempotency_argument": "a b"})

    assert len(problems) == 1 and problems[0].startswith("/idempotency_argument:")


def test_send_null_names_top_level_properties_of_the_parameters():
    assert config_problems({"upstream": "shipping", "tool": "t", "send_null": ["/shipment_id"]}) == []
    assert config_problems({"upstream": "shipping", "tool": "t", "send_null": ["/carrier"]}) == [
        "send_null names /carrier, which is not a property of the parameters schema."
    ]
    nested = config_problems({"upstream": "shipping", "tool": "t", "send_null": ["/shipment_id/x"]})
    assert len(nested) == 1 and nested[0].startswith("/send_null/0:")


@pytest.mark.parametrize(("config", "found"), [
    ({"upstream": "shipping", "tool": "schedule_pickup"}, True),
    ({"upstream": "shipping", "tool": "schedule_pickup", "idempotency_argument": "idempotency_key"}, False),
])
def test_lint_asks_a_write_for_the_key_its_status_tool_needs(config, found):
    findings = lint_tool(ToolDefinition(
        name="schedule_pickup", description="Books a pickup. Not for tracking.", parameters=PARAMETERS,
        side_effect="write", timeout_s=5, executor="mcp", executor_config=config,
    ))

    reconcile = [f for f in findings if f.code == "write-without-reconcile"]
    assert bool(reconcile) is found
    if found:
        assert '"idempotency_argument"' in reconcile[0].fix and "status tool" in reconcile[0].fix
