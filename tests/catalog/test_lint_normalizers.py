"""Lint of normalizers: they run before the schema check, so one that cannot make a sloppy
value acceptable, or that makes an accepted value refused, is worth a warning (issue 11, item 6)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.catalog.lint import ToolDefinition, lint_tool
from apps.demo_shop.tool_definitions import DEMO_TOOLS
from tests.factories import ToolFactory

from .factories import published

DESCRIPTION = "Finds orders. At most 20 results. Do not use it to change anything."


def findings_of(field: dict, ops: list[str]) -> dict[str, str]:
    tool = ToolDefinition(
        name="find_orders",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {"field": {"description": "A field.", **field}},
            "required": ["field"],
            "additionalProperties": False,
        },
        normalizers={"field": ops},
    )
    return {f.code: f.field for f in lint_tool(tool) if f.code.startswith("normalizer-")}


@pytest.mark.parametrize(
    ("field", "ops"),
    [
        ({"type": "string", "enum": ["pending", "paid"]}, ["trim", "lower"]),
        ({"type": "string", "pattern": r"^ORD-\d{6}$"}, ["trim", "upper"]),
        ({"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}, ["date"]),
        ({"type": "array", "items": {"type": "string", "enum": ["A", "B"]}}, ["upper"]),
        ({"type": "integer"}, ["volatile"]),
        ({"description": "Any JSON value."}, ["trim"]),
    ],
)
def test_a_normalizer_that_fixes_sloppy_values_draws_no_warning(field, ops):
    assert findings_of(field, ops) == {}


@pytest.mark.parametrize(
    ("field", "ops"),
    [
        ({"type": "integer", "minimum": 1}, ["trim"]),
        ({"type": ["integer", "null"]}, ["lower"]),
        ({"type": "array", "items": {"type": "boolean"}}, ["upper"]),
        ({"type": "string", "enum": ["100", "200"]}, ["lower", "upper"]),
        ({"type": "string", "const": "2026-01-31"}, ["lower"]),
    ],
)
def test_a_normalizer_that_cannot_change_anything_that_matters_is_a_warning(field, ops):
    assert findings_of(field, ops) == {"normalizer-without-effect": "normalizers/field"}


def test_a_normalizer_that_turns_allowed_values_into_refused_ones_is_a_warning():
    found = findings_of({"type": "string", "enum": ["pending", "paid"]}, ["upper"])

    assert found == {"normalizer-refuses-valid-values": "normalizers/field"}


def test_the_demo_tools_declare_normalizers_lint_finds_nothing_wrong_with():
    for name, spec in DEMO_TOOLS.items():
        tool = ToolDefinition(
            name=name,
            description=spec["description"],
            parameters=spec["parameters"],
            context_bindings=spec.get("context_bindings", {}),
            normalizers=spec.get("normalizers", {}),
        )
        assert not [f for f in lint_tool(tool) if f.code.startswith("normalizer-")], name


@pytest.mark.django_db
def test_lint_tools_reports_a_stored_versions_normalizer(capsys):
    published(
        tool=ToolFactory(name="count_things"),
        number=1,
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {"limit": {"type": "integer", "description": "At most 20."}},
            "required": ["limit"],
            "additionalProperties": False,
        },
        normalizers={"limit": ["trim"]},
    )

    call_command("lint_tools", "--json")

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    found = [(line["code"], line["field"]) for line in lines]
    assert found == [("normalizer-without-effect", "normalizers/limit")]
