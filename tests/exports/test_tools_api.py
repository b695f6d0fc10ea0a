"""GET /api/v1/tools: what this agent may call now, in each vendor's format."""

from __future__ import annotations

import mcp_types
import pytest
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionToolParam
from openai.types.shared_params import FunctionDefinition
from pydantic import TypeAdapter

from apps.catalog.models import Tool, ToolVersion
from apps.common.catalog_generation import catalog_changed
from apps.tenancy.models import Grant
from apps.tenancy.services import agent_key_issue
from tests.agent_tools import SEARCH_ORDERS_DESCRIPTIONS, SEARCH_ORDERS_SCHEMA
from tests.exports.test_formats import is_object, nodes

DEMO_NAMES = ["cancel_order", "get_order", "refund_payment", "search_orders", "request_capability"]


def tools(api, **params):
    return api.get("/api/v1/tools", params)


def names(body):
    return [t["function"]["name"] if body["format"] == "openai" else t["name"] for t in body["tools"]]


def without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    return schema


@pytest.mark.django_db
def test_openai_export_of_search_orders_is_the_issue_schema_plus_descriptions(api, demo_tools):
    response = tools(api, format="openai")

    assert response.status_code == 200
    body = response.json()
    assert body["format"] == "openai"
    assert names(body) == DEMO_NAMES
    search = body["tools"][DEMO_NAMES.index("search_orders")]
    assert search["type"] == "function" and search["function"]["strict"] is True
    parameters = search["function"]["parameters"]
    assert without_descriptions(parameters) == SEARCH_ORDERS_SCHEMA
    assert {
        name: p["description"] for name, p in parameters["properties"].items()
    } == SEARCH_ORDERS_DESCRIPTIONS


@pytest.mark.django_db
def test_openai_export_validates_as_strict_function_tools(api, demo_tools):
    body = tools(api, format="openai").json()

    for tool in body["tools"]:
        TypeAdapter(ChatCompletionToolParam).validate_python(tool)
        TypeAdapter(FunctionDefinition).validate_python(tool["function"])
        assert set(tool) == {"type", "function"}
        assert set(tool["function"]) == {"name", "description", "parameters", "strict"}
        for node in nodes(tool["function"]["parameters"]):
            if is_object(node):
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
            assert not {"allOf", "not", "if", "then", "else", "oneOf"} & set(node)


@pytest.mark.django_db
def test_anthropic_export_validates_as_tools_without_unsupported_constraints(api, demo_tools):
    body = tools(api, format="anthropic").json()

    assert names(body) == DEMO_NAMES
    for tool in body["tools"]:
        TypeAdapter(ToolParam).validate_python(tool)
        assert set(tool) == {"name", "description", "input_schema"}
        for node in nodes(tool["input_schema"]):
            assert not {"minimum", "maximum", "minLength", "maxLength", "pattern", "multipleOf"} & set(node)
            if is_object(node):
                assert node["additionalProperties"] is False
    limit = body["tools"][DEMO_NAMES.index("search_orders")]["input_schema"]["properties"]["limit"]
    assert limit == {"type": "integer", "description": SEARCH_ORDERS_DESCRIPTIONS["limit"]}
    refund = body["tools"][DEMO_NAMES.index("refund_payment")]["input_schema"]["properties"]
    assert refund["amount_cents"]["description"].endswith("at most the order's amount.")
    assert refund["order_id"]["description"].endswith("Must match the regular expression ^ORD-\\d{6}$.")


@pytest.mark.django_db
def test_mcp_export_validates_as_mcp_tools_and_keeps_the_full_schema(api, demo_tools):
    body = tools(api, format="mcp").json()

    for tool in body["tools"]:
        parsed = mcp_types.Tool.model_validate(tool)
        assert set(tool) == {"name", "description", "inputSchema", "annotations"}
        assert parsed.name == tool["name"]
    search = body["tools"][DEMO_NAMES.index("search_orders")]["inputSchema"]
    assert without_descriptions(search) == SEARCH_ORDERS_SCHEMA


@pytest.mark.django_db
def test_bound_fields_are_removed_from_every_format(api, demo_tools):
    for fmt in ("openai", "anthropic", "mcp", "toolhub"):
        body = tools(api, format=fmt).json()
        for tool in body["tools"]:
            schema = (
                tool.get("function", {}).get("parameters")
                or tool.get("input_schema")
                or tool.get("inputSchema")
                or tool["parameters"]
            )
            assert "user_id" not in schema["properties"] and "user_id" not in schema["required"]


@pytest.mark.django_db
def test_toolhub_format_states_token_estimates_per_tool_and_in_total(api, demo_tools):
    response = tools(api)

    body = response.json()
    assert body["format"] == "toolhub"
    per_tool = {t["name"]: t["token_estimate"] for t in body["tools"]}
    assert per_tool == body["tool_token_estimates"]
    assert all(n > 10 for n in per_tool.values())
    assert body["token_estimate"] == sum(per_tool.values())
    assert response["X-ToolHub-Token-Estimate"] == str(body["token_estimate"])
    search = body["tools"][DEMO_NAMES.index("search_orders")]
    assert (search["version"], search["side_effect"]) == (1, "readonly")


@pytest.mark.django_db
def test_toolset_and_phase_narrow_the_list_but_request_capability_stays(api, demo_tools):
    lookup = tools(api, format="mcp", toolset="support", phase="lookup").json()
    resolve = tools(api, format="mcp", toolset="support", phase="resolve").json()

    assert names(lookup) == ["get_order", "search_orders", "request_capability"]
    assert names(resolve) == DEMO_NAMES


@pytest.mark.django_db
def test_an_agent_with_no_grants_still_sees_request_capability(api):
    body = tools(api, format="openai").json()

    assert names(body) == ["request_capability"]
    schema = body["tools"][0]["function"]["parameters"]
    assert schema["required"] == ["capability", "reason", "example_arguments"]
    assert schema["properties"]["example_arguments"]["type"] == ["string", "null"]


@pytest.mark.django_db
def test_unknown_format_is_a_400_envelope_listing_the_allowed_values(api):
    response = tools(api, format="gemini")

    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "error" and body["kind"] == "invalid_args"
    assert body["details"] == [
        {
            "path": "/format",
            "problem": '"gemini" is not a format; use one of openai, anthropic, mcp, toolhub.',
        }
    ]


@pytest.mark.django_db
def test_unknown_toolset_or_phase_is_a_400_naming_the_known_ones(api, demo_tools):
    unknown_toolset = tools(api, toolset="sales")
    unknown_phase = tools(api, toolset="support", phase="refunds")

    assert unknown_toolset.status_code == unknown_phase.status_code == 400
    assert unknown_toolset.json()["hint"] == "Known toolsets: support."
    assert unknown_phase.json()["hint"] == "Its phases: lookup, resolve."


@pytest.mark.django_db
def test_without_a_key_the_answer_is_401(client):
    response = client.get("/api/v1/tools")

    assert response.status_code == 401 and response.json()["kind"] == "forbidden"


@pytest.mark.django_db
def test_the_export_follows_publishes_and_grants(api, agent, demo_tools, django_capture_on_commit_callbacks):
    before = names(tools(api, format="anthropic").json())
    search = Tool.objects.get(name="search_orders")
    v2 = ToolVersion.objects.create(
        tool=search,
        number=2,
        description="Lists orders, v2.",
        parameters=SEARCH_ORDERS_SCHEMA,
        side_effect="readonly",
        executor="python",
        executor_config={"callable": "tests.echo"},
    )
    extra = Tool.objects.create(name="list_returns")
    ToolVersion.objects.create(
        tool=extra,
        number=1,
        description="Lists returns.",
        parameters=SEARCH_ORDERS_SCHEMA,
        side_effect="readonly",
        executor="python",
        executor_config={"callable": "tests.echo"},
        status="draft",
    )
    with django_capture_on_commit_callbacks(execute=True):
        v2.status = "published"
        v2.save()
        ToolVersion.objects.filter(tool=extra).update(status="published")
        Grant.objects.create(tenant=agent.tenant, agent=agent, tool=extra)
        catalog_changed()

    after = tools(api, format="toolhub").json()

    assert "list_returns" not in before
    assert names(after) == [
        "cancel_order",
        "get_order",
        "list_returns",
        "refund_payment",
        "search_orders",
        "request_capability",
    ]
    search_listing = after["tools"][names(after).index("search_orders")]
    assert (search_listing["version"], search_listing["description"]) == (2, "Lists orders, v2.")


@pytest.mark.django_db
def test_a_pinned_grant_exports_the_pinned_version(
    api, agent, publish_tool, django_capture_on_commit_callbacks
):
    v1 = publish_tool("lookup_thing")
    v2 = ToolVersion.objects.create(
        tool=v1.tool,
        number=2,
        description="Second version.",
        parameters=v1.parameters,
        side_effect="readonly",
        executor="python",
        executor_config={"callable": "tests.echo"},
        context_bindings=v1.context_bindings,
    )
    v2.status = "published"
    v2.save()
    Grant.objects.filter(agent=agent, tool=v1.tool).update(pinned_version=v1)

    listing = tools(api).json()["tools"][0]

    assert (listing["name"], listing["version"]) == ("lookup_thing", 1)


@pytest.mark.django_db
def test_each_agent_sees_only_its_own_grants(api, agent, demo_tools):
    colleague = type(agent).objects.create(tenant=agent.tenant, name="colleague")
    other = type(api)()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=colleague).secret}")

    mine = names(tools(api, format="mcp").json())
    theirs = names(tools(other, format="mcp").json())

    assert mine == DEMO_NAMES
    assert theirs == ["request_capability"]
