"""Lint of tool definitions: each check, its severity and advice; publishing obeys errors."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from apps.catalog.lint import ToolDefinition, description_overlap, has_errors, lint_tool, lint_toolset
from apps.catalog.models import Toolset, ToolVersion, VersionStatus
from apps.catalog.services import version_publish
from apps.demo_shop.tool_definitions import DEMO_TOOLS
from tests.factories import ToolFactory, ToolVersionFactory

from .factories import published

GOOD_DESCRIPTION = "Finds orders. At most 20 results. Do not use it to change anything."


def definition(**changes) -> ToolDefinition:
    base = {
        "name": "find_orders",
        "description": GOOD_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    }
    return ToolDefinition(**{**base, **changes})


def schema(properties: dict, **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False, **extra}


def codes(findings) -> dict[str, str]:
    return {f.code: f.severity for f in findings}


def test_a_sound_definition_has_no_finding():
    assert lint_tool(definition()) == []


def test_a_tool_named_like_a_built_in_one_is_an_error():
    # a tool stored under a built-in name before such names were refused is never called
    findings = [f for f in lint_tool(definition(name="request_capability")) if f.code == "reserved-name"]

    assert [(f.severity, f.field, f.tool) for f in findings] == [("error", "name", "request_capability")]
    assert "never called" in findings[0].why and "Rename the tool" in findings[0].fix


def test_the_demo_tools_lint_without_errors():
    demo = [
        ToolDefinition(name=name, **{k: v for k, v in spec.items() if k in (
            "description", "parameters", "side_effect", "executor", "executor_config", "timeout_s",
            "context_bindings")})
        for name, spec in DEMO_TOOLS.items()
    ]

    for tool in demo:
        assert not has_errors(lint_tool(tool, others=demo)), tool.name
    assert {f.severity for f in lint_toolset("support", demo, tokens_of=lambda t: 300)} == {"info"}


def test_a_free_text_status_should_be_an_enum():
    findings = lint_tool(definition(parameters=schema({
        "status": {"type": "string", "description": "Order status."},
        "order_currency": {"type": "string", "description": "ISO code."},
        "kind": {"type": "string", "enum": ["a", "b"], "description": "Which."},
    })))

    closed = [f for f in findings if f.code == "closed-set-as-free-text"]
    assert [f.field for f in closed] == [
        "parameters/properties/order_currency", "parameters/properties/status",
    ]
    assert closed[0].severity == "warning" and "enum" in closed[0].fix
    assert "not cancelled" in closed[0].why


def test_objects_must_forbid_extra_properties_even_nested():
    findings = lint_tool(definition(parameters={
        "type": "object",
        "properties": {"filter": {"type": "object", "properties": {}, "description": "Filters."}},
        "required": ["filter"],
    }))

    extra = [f for f in findings if f.code == "extra-properties-allowed"]
    assert [(f.field, f.severity) for f in extra] == [
        ("parameters", "error"), ("parameters/properties/filter", "error"),
    ]
    assert 'Add "additionalProperties": false' in extra[0].fix


IMPORTED = {"kind": "openapi", "upstream": "shop", "key": "op", "pointer": "/paths/~1x/post"}


def open_objects(node: dict, **changes) -> list[tuple[str, str, str]]:
    """(code, severity, field) of the findings about objects open to extra keys, for a
    `metadata` argument of schema `node`."""
    findings = lint_tool(definition(parameters=schema({"metadata": {**node, "description": "Labels."}}),
                                    **changes))
    return [(f.code, f.severity, f.field) for f in findings if f.code in ("extra-properties-allowed",
                                                                          "free-form-map")]


@pytest.mark.parametrize("values", [
    {"type": "string"},  # Stripe's metadata
    {"anyOf": [{"type": "string"}, {"type": "number"}]},
    schema({"amount": {"type": "integer", "description": "Cents."}}),  # Stripe's currency_options
])
@pytest.mark.parametrize("source", [{}, IMPORTED])
def test_a_map_whose_values_have_a_schema_is_no_finding(values, source):
    # its keys are data: there is no field name to misspell
    assert open_objects({"type": "object", "additionalProperties": values}, source=source) == []


def test_the_values_of_a_map_are_objects_checked_like_any_other():
    values = {"type": "object", "properties": {"amount": {"type": "integer", "description": "Cents."}}}

    assert open_objects({"type": "object", "additionalProperties": values}) == [
        ("extra-properties-allowed", "error", "parameters/properties/metadata/additionalProperties"),
    ]


@pytest.mark.parametrize("values", [True, {}, {"description": "Anything."}])
@pytest.mark.parametrize("source", [{}, IMPORTED])
def test_a_map_of_any_values_is_a_warning_naming_that_any_key_is_accepted(values, source):
    findings = [f for f in lint_tool(definition(parameters=schema({"payload": {
        "type": "object", "additionalProperties": values, "description": "Sent as is."}}), source=source))
        if f.code == "free-form-map"]

    assert [(f.severity, f.field) for f in findings] == [("warning", "parameters/properties/payload")]
    assert "accepts any key with any value" in findings[0].why
    assert "additionalProperties" in findings[0].fix


def test_a_bare_object_is_an_error_written_by_hand_and_a_warning_when_a_document_says_so():
    # by hand, most often fields not listed; an import's is the API's free-form value (Twilio's AddOnsData)
    assert open_objects({"type": "object"}) == [
        ("extra-properties-allowed", "error", "parameters/properties/metadata"),
    ]
    assert open_objects({"type": "object"}, source=IMPORTED) == [
        ("free-form-map", "warning", "parameters/properties/metadata"),
    ]


@pytest.mark.parametrize("source", [{}, IMPORTED])
def test_properties_beside_a_schema_for_the_others_or_arguments_as_a_map_are_errors(source):
    # a misspelled listed field is accepted as one of the others
    beside = {"type": "object", "properties": {"id": {"type": "string", "description": "Id."}},
              "additionalProperties": {"type": "string"}}
    as_map = {"type": "object", "additionalProperties": {"type": "string"}}

    assert open_objects(beside, source=source) == [
        ("extra-properties-allowed", "error", "parameters/properties/metadata"),
    ]
    assert [(f.code, f.field) for f in lint_tool(definition(parameters=as_map, source=source))
            if f.is_error] == [("extra-properties-allowed", "parameters")]


def test_optional_fields_in_a_strict_tool_are_errors_but_not_in_a_loose_one():
    loose_schema = {**schema({"query": {"type": "string", "description": "x"},
                              "limit": {"type": "integer", "description": "At most 100."}}),
                    "required": ["query"]}

    strict = lint_tool(definition(parameters=loose_schema))
    loose = lint_tool(definition(parameters=loose_schema, strict=False))

    (finding,) = [f for f in strict if f.code == "optional-in-strict"]
    assert finding.severity == "error" and "limit is optional" in finding.why
    assert "optional-in-strict" not in codes(loose)


def test_descriptions_must_say_limits_and_when_not_to_use():
    findings = lint_tool(definition(description="Finds orders."))

    assert codes(findings) == {
        "description-without-limits": "warning", "description-without-when-not": "warning",
    }


@pytest.mark.parametrize("name", ["sql", "where", "raw_filter", "url", "command"])
def test_implementation_details_as_parameters_are_errors(name):
    findings = lint_tool(definition(parameters=schema({name: {"type": "string", "description": "x"}})))

    assert codes(findings)["implementation-parameter"] == "error"


def test_a_query_is_fine_unless_it_passes_a_query_language_through():
    plain = lint_tool(definition())
    passthrough = lint_tool(definition(parameters=schema({
        "query": {"type": "string", "description": "An SQL expression passed through to the database."},
    })))

    assert plain == []
    assert codes(passthrough)["implementation-parameter"] == "error"


def test_parameters_need_descriptions_except_bound_ones():
    findings = lint_tool(definition(
        parameters=schema({"query": {"type": "string"}, "user_id": {"type": "string"}}),
        context_bindings={"user_id": {"source": "session.subject", "policy": "must_match"}},
    ))

    assert [(f.code, f.field) for f in findings] == [("undescribed-parameter", "parameters/properties/query")]


def test_identity_fields_must_be_bound_to_the_session():
    findings = lint_tool(definition(parameters=schema({
        "account_id": {"type": "string", "description": "Whose account."},
    })))

    (finding,) = findings
    assert (finding.code, finding.severity) == ("identity-not-bound", "error")
    assert '"account_id": {"source": "session.subject"' in finding.fix


def test_a_write_needs_a_timeout_and_a_reconcile_path():
    bare = lint_tool(definition(side_effect="write", timeout_s=None, executor_config={"callable": "x"}))
    python_ok = lint_tool(
        definition(side_effect="write", executor_config={"callable": "x", "reconcile": "x"})
    )
    http = lint_tool(definition(side_effect="write", executor="http", executor_config={"url": "http://x"}))

    assert codes(bare) == {"write-without-timeout": "error", "write-without-reconcile": "warning"}
    assert python_ok == []
    (finding,) = http
    assert "status_path" in finding.fix


def test_tools_that_read_alike_are_flagged():
    twin = definition(name="search_orders", description="Finds orders. At most 20 results. Do not use it to "
                                                        "change anything, ever.")
    other = definition(name="refund", description="Refunds a payment in cents. Only when the user asks.")

    findings = lint_tool(definition(), others=[twin, other])

    (finding,) = findings
    assert finding.code == "overlapping-tools" and "search_orders" in finding.why
    assert description_overlap(GOOD_DESCRIPTION, other.description) < 0.2


def test_toolsets_are_flagged_when_too_large_and_report_their_token_cost():
    tools = [definition(name=f"tool_{i}") for i in range(5)]

    small = lint_toolset("support", tools, max_tools=10, max_tokens=1000, tokens_of=lambda t: 100)
    large = lint_toolset("support", tools, max_tools=4, max_tokens=400, tokens_of=lambda t: 100)

    assert [(f.code, f.severity) for f in small] == [("toolset-tokens", "info")]
    assert "about 500 tokens per request" in small[0].why
    assert codes(large) == {"toolset-too-large": "warning", "toolset-tokens": "warning"}
    assert "over the budget of 400" in large[1].why


@pytest.mark.django_db
def test_publishing_is_refused_while_lint_finds_errors():
    draft = ToolVersionFactory(tool=ToolFactory(name="lookup"), number=1, parameters=schema({
        "user_id": {"type": "string", "description": "Whose orders."},
    }))

    with pytest.raises(ValidationError, match="lookup v1 cannot be published: lint found 1 error") as refused:
        version_publish(version=draft, actor="curator")

    assert "Bind it to the session in context_bindings" in str(refused.value)
    assert ToolVersion.objects.get(pk=draft.pk).status == VersionStatus.DRAFT


@pytest.mark.django_db
def test_warnings_do_not_block_publishing():
    draft = ToolVersionFactory(tool=ToolFactory(name="lookup"), number=1, description="Looks things up.")

    assert version_publish(version=draft, actor="curator").status == VersionStatus.PUBLISHED


@pytest.mark.django_db
def test_lint_tools_exits_1_on_errors_and_prints_why_and_how(capsys):
    published(tool=ToolFactory(name="fine"), number=1)
    ToolVersionFactory(tool=ToolFactory(name="leaky"), number=1, parameters=schema({
        "sql": {"type": "string", "description": "Raw SQL."},
    }))

    with pytest.raises(SystemExit) as exited:
        call_command("lint_tools")

    out = capsys.readouterr()
    assert exited.value.code == 1
    assert "ERROR   leaky: parameters/properties/sql [implementation-parameter]" in out.out
    assert "fix: Replace it with the business fields" in out.out
    assert "1 error(s)." in out.err


@pytest.mark.django_db
def test_lint_tools_exits_0_without_errors_and_speaks_json(capsys):
    published(tool=ToolFactory(name="fine"), number=1, description="Finds things.")
    Toolset.objects.create(name="empty")

    call_command("lint_tools", "--json")

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["code"] for line in lines} == {"description-without-limits", "description-without-when-not"}
    assert lines[0]["tool"] == "fine"


ORDER_ID = {"order_id": {"type": "string", "description": "The order."}}


@pytest.mark.parametrize(("config", "bindings", "flagged"), [
    ({"url": "http://x", "method": "GET", "path": "/orders/{order_id}/refunds"}, {}, True),
    ({"url": "http://x", "method": "GET", "path": "/orders/{order_id}/refunds"},
     {"user_id": {"source": "session.subject", "policy": "must_match"}}, False),
    ({"url": "http://x", "method": "GET", "path": "/orders/search"}, {}, False),
])
def test_a_path_naming_any_record_with_nothing_from_the_session_is_flagged(config, bindings, flagged):
    params = schema({**ORDER_ID, **({"user_id": {"type": "string"}} if bindings else {})})

    findings = lint_tool(definition(executor="http", executor_config=config, parameters=params,
                                    context_bindings=bindings))

    codes = [f.code for f in findings]
    assert ("session-unscoped-path" in codes) is flagged
    if flagged:
        (finding,) = [f for f in findings if f.code == "session-unscoped-path"]
        assert (finding.severity, finding.field) == ("warning", "executor_config/path")
        assert "any order_id" in finding.why and "another user's too" in finding.why
