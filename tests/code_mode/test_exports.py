"""What a model is told of run_python: its tools as Python signatures, per toolset and phase."""

from __future__ import annotations

import pytest

from apps.catalog.models import Toolset
from apps.common.catalog_generation import catalog_changed
from apps.demo_shop.seed import demo_seed

RESOLVE_TOOLS = [
    "cancel_order",
    "get_order",
    "pickup_status",
    "refund_payment",
    "schedule_pickup",
    "search_orders",
    "track_shipment",
]


@pytest.fixture
def agent_http(db, client, settings):
    seed = demo_seed()
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {seed.agent_key}"
    return client


def listed(client, **query):
    response = client.get("/api/v1/tools", {"format": "openai", **query})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_description_lists_exactly_the_tools_of_the_phase_as_signatures(agent_http):
    body = listed(agent_http, toolset="support", phase="resolve")

    run_python = next(t["function"] for t in body["tools"] if t["function"]["name"] == "run_python")
    description = run_python["description"]
    for name in RESOLVE_TOOLS:
        assert f"def {name}(*, " in description
    assert "def run_python(" not in description and "def request_capability(" not in description
    assert 'status: Literal["pending", "paid", "cancelled", "all"]' in description
    # Bound to the session: never offered to the code either.
    assert "user_id" not in description


def test_the_estimates_of_run_python_stand_beside_those_of_its_tools(agent_http):
    body = listed(agent_http, toolset="support", phase="resolve")

    estimates = body["code_run_estimates"]["run_python"]
    assert estimates["tools"] == len(RESOLVE_TOOLS)
    assert estimates["token_estimate"] == body["tool_token_estimates"]["run_python"]
    one_by_one = sum(body["tool_token_estimates"][name] for name in RESOLVE_TOOLS)
    assert estimates["tools_token_estimate"] == one_by_one
    assert estimates["token_estimate"] < one_by_one


@pytest.fixture
def run_python_in_lookup(agent_http):
    """run_python placed in phase lookup too, where every tool only reads."""
    toolset = Toolset.objects.get(name="support")
    toolset.phases.get(name="lookup").tools.add(toolset.tools.get(name="run_python"))
    catalog_changed()
    return agent_http


def test_a_run_is_readonly_where_its_tools_only_read(run_python_in_lookup):
    def effect(phase):
        body = listed(run_python_in_lookup, format="toolhub", toolset="support", phase=phase)
        return next(t["side_effect"] for t in body["tools"] if t["name"] == "run_python")

    assert (effect("lookup"), effect("resolve")) == ("readonly", "write")


def test_mcp_hints_follow_the_tools_of_the_phase(run_python_in_lookup):
    def hints(phase):
        body = listed(run_python_in_lookup, format="mcp", toolset="support", phase=phase)
        return next(t["annotations"] for t in body["tools"] if t["name"] == "run_python")

    assert hints("lookup")["readOnlyHint"] is True
    assert hints("resolve")["readOnlyHint"] is False
