"""Pure export transformations: each vendor's strict subset, constraints moved into words."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types
import pytest

from apps.catalog.exports import (
    FORMATS,
    estimate_tokens,
    export_tool,
    export_tools,
)
from apps.common.schemas.nulls import strip_optional_nulls

OPTIONALS = {
    "type": "object",
    "properties": {
        "user_id": {"type": "string"},
        "query": {"type": "string", "minLength": 2, "maxLength": 50, "description": "What to look for."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        "sort": {"enum": ["new", "old"]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "format": "uuid"},
        "filters": {
            "type": "object",
            "properties": {"tag": {"type": "string"}, "color": {"type": "string"}},
            "required": ["tag"],
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 2,
            "maxItems": 5,
            "uniqueItems": True,
        },
        "place": {"$ref": "#/$defs/place"},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["user_id", "query"],
    "additionalProperties": False,
    "dependentRequired": {"sort": ["limit"]},
    "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
}


@dataclass(frozen=True)
class Spec:
    parameters: Mapping[str, Any]
    tool_name: str = "find_things"
    number: int = 2
    description: str = "Finds things."
    context_bindings: Mapping[str, Any] = field(default_factory=lambda: {"user_id": {}})
    side_effect: str = "readonly"
    output_schema: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, Any] = field(default_factory=dict)


def nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema node of a schema, depth first."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in ("properties", "$defs"):
        for sub in schema.get(key, {}).values():
            yield from nodes(sub)
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"])
    for key in ("anyOf", "allOf"):
        for sub in schema.get(key, []):
            yield from nodes(sub)


def is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def test_openai_makes_every_property_required_and_optional_ones_nullable():
    parameters = export_tool(Spec(OPTIONALS), "openai")["function"]["parameters"]

    for node in nodes(parameters):
        if is_object(node):
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node.get("properties", {}))
        assert not {"allOf", "oneOf", "not", "if", "then", "else", "dependentRequired"} & set(node)
    props = parameters["properties"]
    assert "user_id" not in props and "user_id" not in parameters["required"]
    assert props["query"]["type"] == "string"
    assert props["limit"]["type"] == ["integer", "null"]
    assert props["sort"]["enum"] == ["new", "old", None]
    assert props["filters"]["type"] == ["object", "null"]
    assert props["filters"]["properties"]["color"]["type"] == ["string", "null"]
    assert props["filters"]["properties"]["tag"]["type"] == "string"
    assert props["place"]["anyOf"] == [{"$ref": "#/$defs/place"}, {"type": "null"}]
    assert props["either"]["anyOf"] == [{"type": "string"}, {"type": "integer"}, {"type": "null"}]


def test_openai_keeps_what_it_supports_and_words_the_rest():
    props = export_tool(Spec(OPTIONALS), "openai")["function"]["parameters"]["properties"]

    assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 100)
    assert props["code"]["pattern"] == "^[A-Z]{3}$" and props["code"]["format"] == "uuid"
    assert (props["tags"]["minItems"], props["tags"]["maxItems"]) == (2, 5)
    assert "minLength" not in props["query"] and "maxLength" not in props["query"]
    assert props["query"]["description"] == "What to look for. 2 to 50 characters."
    assert props["limit"]["description"] == "Default 20."
    assert props["tags"]["description"] == "Items must be unique."


def test_anthropic_drops_numeric_length_and_pattern_constraints_into_descriptions():
    tool = export_tool(Spec(OPTIONALS), "anthropic")
    schema = tool["input_schema"]

    for node in nodes(schema):
        assert not {"minimum", "maximum", "minLength", "maxLength", "pattern", "maxItems", "default"} & set(
            node
        )
        if is_object(node):
            assert node["additionalProperties"] is False
    props = schema["properties"]
    assert schema["required"] == ["query"]
    assert props["limit"]["description"] == "1 to 100; default 20."
    assert props["code"]["description"] == "Must match the regular expression ^[A-Z]{3}$."
    assert props["code"]["format"] == "uuid"
    assert props["tags"]["description"] == "2 to 5 items; items must be unique."
    assert "minItems" not in props["tags"]
    assert tool["description"] == "Finds things. With sort also give limit."


def test_a_constraint_already_in_the_description_is_not_repeated():
    spec = Spec(
        {
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "1 to 100."}
            },
            "required": ["limit"],
            "additionalProperties": False,
        },
        context_bindings={},
    )

    assert export_tool(spec, "anthropic")["input_schema"]["properties"]["limit"]["description"] == "1 to 100."


def test_mcp_and_toolhub_keep_the_full_schema_without_bound_fields():
    mcp = export_tool(Spec(OPTIONALS), "mcp")
    listing = export_tool(Spec(OPTIONALS), "toolhub")

    expected = json.loads(json.dumps(OPTIONALS))
    del expected["properties"]["user_id"]
    expected["required"] = ["query"]
    assert mcp == {
        "name": "find_things", "description": "Finds things.", "inputSchema": expected,
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    }
    assert listing["parameters"] == expected
    assert (listing["version"], listing["side_effect"]) == (2, "readonly")
    assert "outputSchema" not in mcp and "output_schema" not in listing


ORDER_RESULT = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string", "enum": ["paid", "open"]}},
    "required": ["order_id"],
}


def test_mcp_and_toolhub_list_the_output_schema_a_version_declares():
    spec = Spec(OPTIONALS, output_schema=ORDER_RESULT)

    assert export_tool(spec, "mcp")["outputSchema"] == ORDER_RESULT
    assert export_tool(spec, "toolhub")["output_schema"] == ORDER_RESULT
    # The vendors' function-calling formats have no place for it: they stay as they take them.
    vendors = json.dumps(export_tool(spec, "openai")) + json.dumps(export_tool(spec, "anthropic"))
    assert "output" not in vendors


@pytest.mark.parametrize(
    ("side_effect", "read_only", "destructive"),
    [("readonly", True, False), ("recomputable", False, False), ("write", False, True)],
)
def test_mcp_annotations_follow_the_reviewed_side_effect(side_effect, read_only, destructive):
    annotations = export_tool(Spec(OPTIONALS, side_effect=side_effect), "mcp")["annotations"]

    assert annotations == {"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": True}
    assert mcp_types.ToolAnnotations.model_validate(annotations).read_only_hint is read_only


def test_imported_annotations_are_kept_but_the_side_effect_class_wins():
    # The server said read-only; the curator reviewed the tool as a write.
    imported = {"title": "Cancel an order", "readOnlyHint": True, "destructiveHint": False,
                "idempotentHint": False, "openWorldHint": True}
    spec = Spec(OPTIONALS, side_effect="write", annotations=imported)

    annotations = export_tool(spec, "mcp")["annotations"]

    assert annotations == {"title": "Cancel an order", "openWorldHint": True, "readOnlyHint": False,
                           "destructiveHint": True, "idempotentHint": True}


@pytest.mark.parametrize("fmt", FORMATS)
def test_token_estimate_is_compact_json_characters_over_four(fmt):
    export = export_tools([Spec(OPTIONALS), Spec(OPTIONALS, tool_name="other")], fmt)

    for tool in export.tools:
        measured = {k: v for k, v in tool.items() if k != "token_estimate"}
        name = tool["function"]["name"] if fmt == "openai" else tool["name"]
        compact = json.dumps(measured, ensure_ascii=False, separators=(",", ":"))
        assert export.token_estimates[name] == math.ceil(len(compact) / 4) == estimate_tokens(measured)
    assert export.token_estimate == sum(export.token_estimates.values())


def test_nulls_of_optional_fields_mean_not_given():
    arguments = {
        "query": "shoes",
        "limit": None,
        "sort": None,
        "filters": {"tag": "red", "color": None},
        "place": None,
        "user_id": None,
    }

    assert strip_optional_nulls(arguments, OPTIONALS) == {
        "query": "shoes",
        "filters": {"tag": "red"},
        "user_id": None,
    }


def test_a_null_the_schema_allows_is_kept():
    schema = {"type": "object", "properties": {"note": {"type": ["string", "null"]}, "any": {}}}

    assert strip_optional_nulls({"note": None, "any": None}, schema) == {"note": None, "any": None}
