"""An mcp version's config is checked against its parameters on every save. Pure."""

from __future__ import annotations

from typing import Any

from apps.catalog.definitions import validate_definition

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
