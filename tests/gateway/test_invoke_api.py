"""POST /api/v1/invoke: every outcome is an envelope a model can learn from."""

from __future__ import annotations

import pytest

from apps.audit.models import Invocation
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import TenantPolicy
from apps.tenancy.services import grant_delete
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db

STATUS_SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["pending", "paid", "cancelled", "all"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "user_id": {"type": "string"},
    },
    "required": ["status", "limit", "user_id"],
    "additionalProperties": False,
}


# A tool without a session binding whose executor returns `count` items.
COUNT_ITEMS = {
    "parameters": {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
        "additionalProperties": False,
    },
    "context_bindings": {},
    "executor_config": {"callable": "tests.items"},
}


def assert_refused(response, kind: str, recoverable: bool) -> dict:
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "error"
    assert body["kind"] == kind, body
    assert body["recoverable"] is recoverable
    assert body["message"] and body["hint"]
    assert not RUNS, "a refused call must not reach the executor"
    assert not LedgerEntry.objects.exists(), "a refused call must not write a ledger row"
    return body


def test_readonly_call_runs_with_identity_from_the_session(api, publish_tool, session_for):
    publish_tool("lookup")

    response = invoke(api, "lookup", '{"query": " shoes "}', session=session_for("u-1001"))

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "ok"
    assert body["call_id"] == "call_1" and body["tool"] == "lookup" and body["version"] == 1
    assert body["data"] == {"echo": {"query": " shoes ", "user_id": "u-1001"}}
    assert body["cached"] is False and body["truncated"] is None
    assert not LedgerEntry.objects.exists()


def test_free_text_in_a_closed_set_is_refused_with_the_allowed_values(api, publish_tool, session_for):
    publish_tool("search", parameters=STATUS_SCHEMA)

    response = invoke(api, "search", '{"status": "not cancelled", "limit": 20}', session=session_for("u-1"))

    body = assert_refused(response, "invalid_args", True)
    assert "pending, paid, cancelled, all" in body["hint"]
    assert {"path": "/status"}.items() <= body["details"][0].items()


def test_arguments_that_do_not_parse_are_invalid_json(api, publish_tool, session_for):
    publish_tool("lookup")

    body = assert_refused(
        invoke(api, "lookup", '{"query": ', session=session_for("u-1")), "invalid_json", True
    )
    assert "column" in body["message"]


def test_unknown_tool_names_the_closest_tools_and_request_capability(api, publish_tool, session_for):
    publish_tool("search_orders")

    body = assert_refused(invoke(api, "search_order", "{}", session=session_for("u-1")), "unknown_tool", True)
    assert "search_orders" in body["hint"]
    assert "request_capability" in body["hint"]


def test_a_tool_not_granted_to_the_agent_is_forbidden(api, publish_tool, session_for):
    version = publish_tool("admin_tool")
    version.tool.grants.all().delete()

    assert_refused(
        invoke(api, "admin_tool", '{"query": "x"}', session=session_for("u-1")), "forbidden", False
    )


def test_a_grant_removed_between_two_calls_refuses_the_second(
    api, publish_tool, session_for, django_capture_on_commit_callbacks
):
    version = publish_tool("lookup")
    session = session_for("u-1")
    assert invoke(api, "lookup", '{"query": "a"}', session=session, call_id="c1").json()["status"] == "ok"
    RUNS.clear()

    with django_capture_on_commit_callbacks(execute=True):
        for grant in version.tool.grants.all():
            grant_delete(grant=grant, actor="curator")

    assert_refused(
        invoke(api, "lookup", '{"query": "b"}', session=session, call_id="c2"), "forbidden", False
    )


def test_another_users_id_sent_by_the_model_is_forbidden(api, publish_tool, session_for):
    publish_tool("lookup")

    body = assert_refused(
        invoke(api, "lookup", '{"query": "x", "user_id": "u-2002"}', session=session_for("u-1001")),
        "forbidden",
        False,
    )
    assert "user_id" in body["message"]


def test_a_bound_tool_without_a_session_is_forbidden_with_a_hint_for_the_integrator(api, publish_tool):
    publish_tool("lookup")

    body = assert_refused(invoke(api, "lookup", '{"query": "x"}'), "forbidden", False)
    assert "X-ToolHub-Session" in body["hint"]


def test_a_tampered_session_token_is_forbidden(api, publish_tool, session_for):
    publish_tool("lookup")
    token = session_for("u-1001")
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]

    assert_refused(invoke(api, "lookup", '{"query": "x"}', session=tampered), "forbidden", False)


def test_the_same_call_repeated_past_the_loop_limit_is_detected(api, publish_tool, session_for):
    publish_tool("lookup", loop_limit=2)
    session = session_for("u-1")
    for n in range(2):
        assert (
            invoke(api, "lookup", '{"query": "x"}', session=session, call_id=f"c{n}").json()["status"] == "ok"
        )
    RUNS.clear()

    body = assert_refused(
        invoke(api, "lookup", '{"query":"x"}', session=session, call_id="c3"), "loop_detected", True
    )
    assert "change" in body["hint"].lower()


def test_the_agents_rate_per_tool_is_limited(api, agent, publish_tool, session_for):
    version = publish_tool("lookup")
    TenantPolicy.objects.create(tenant=agent.tenant, tool=version.tool, rate_limit_per_minute=2)
    session = session_for("u-1")
    for n in range(2):
        assert (
            invoke(api, "lookup", f'{{"query": "{n}"}}', session=session, call_id=f"c{n}").json()["status"]
            == "ok"
        )
    RUNS.clear()

    body = assert_refused(
        invoke(api, "lookup", '{"query": "z"}', session=session, call_id="c9"), "rate_limited", True
    )
    assert body["retry_after_s"] > 0


def test_calls_refused_by_a_rule_count_toward_the_agents_rate(api, agent, publish_tool, session_for):
    version = publish_tool("lookup")
    TenantPolicy.objects.create(
        tenant=agent.tenant, tool=version.tool, rate_limit_per_minute=2, task_call_budget=1
    )
    session = session_for("u-1")
    assert invoke(api, "lookup", '{"query": "a"}', session=session, call_id="c1").json()["status"] == "ok"
    RUNS.clear()
    assert_refused(
        invoke(api, "lookup", '{"query": "b"}', session=session, call_id="c2"), "business_rule", True
    )

    # A new task is within its budget, but the agent has sent its two calls this minute.
    assert_refused(
        invoke(api, "lookup", '{"query": "c"}', session=session, call_id="c3", task_id="t-2"),
        "rate_limited",
        True,
    )


def test_a_refused_call_does_not_use_up_the_tasks_budget(api, agent, publish_tool, session_for):
    version = publish_tool("lookup", loop_limit=2)
    TenantPolicy.objects.create(tenant=agent.tenant, tool=version.tool, task_call_budget=3)
    session = session_for("u-1")
    for n in range(2):
        body = invoke(api, "lookup", '{"query": "x"}', session=session, call_id=f"c{n}").json()
        assert body["status"] == "ok", body
    RUNS.clear()
    assert_refused(
        invoke(api, "lookup", '{"query": "x"}', session=session, call_id="c2"), "loop_detected", True
    )

    # Two calls ran: the third of the budget is still there.
    body = invoke(api, "lookup", '{"query": "y"}', session=session, call_id="c3").json()
    assert body["status"] == "ok", body


def test_a_task_budget_from_the_tenant_policy_is_a_business_rule(api, agent, publish_tool, session_for):
    version = publish_tool("lookup")
    TenantPolicy.objects.create(tenant=agent.tenant, tool=version.tool, task_call_budget=1)
    session = session_for("u-1")
    assert invoke(api, "lookup", '{"query": "a"}', session=session, call_id="c1").json()["status"] == "ok"
    RUNS.clear()

    assert_refused(
        invoke(api, "lookup", '{"query": "b"}', session=session, call_id="c2"), "business_rule", True
    )


def test_a_result_without_items_is_empty_with_the_versions_meaning(api, publish_tool, session_for):
    publish_tool(
        "count_items",
        **COUNT_ITEMS,
        empty_meaning="No items match. This does not mean there are none.",
    )

    body = invoke(api, "count_items", {"count": 0}).json()

    assert body == {
        "status": "empty",
        "call_id": "call_1",
        "tool": "count_items",
        "version": 1,
        "meaning": "No items match. This does not mean there are none.",
        "raw": [],
    }


def test_a_long_result_is_truncated_with_a_note_and_stays_valid_json(api, publish_tool):
    publish_tool(
        "count_items",
        **COUNT_ITEMS,
        max_chars=1000,
    )

    response = invoke(api, "count_items", {"count": 300})

    body = response.json()
    assert body["status"] == "ok"
    assert body["truncated"]["total"] == 300
    assert 0 < body["truncated"]["shown"] < 300
    assert "300" in body["truncated"]["note"]


def test_dry_run_validates_and_says_what_would_run_without_running_it(api, publish_tool, session_for):
    publish_tool("cancel", side_effect="write")

    body = invoke(api, "cancel", '{"query": "x"}', session=session_for("u-1"), dry_run=True).json()

    assert body["status"] == "ok" and body["dry_run"] is True
    assert body["data"]["would_run"]["arguments"] == {"query": "x", "user_id": "u-1"}
    assert body["data"]["would_run"]["idempotency_key"].startswith("acme/t-1/call_1/cancel/")
    assert not RUNS and not LedgerEntry.objects.exists()


def test_every_call_is_written_to_the_invocation_log(api, publish_tool, session_for):
    publish_tool("lookup")
    session = session_for("u-1")

    invoke(api, "lookup", '{"query": "x"}', session=session, call_id="ok-call")
    invoke(api, "nope", "{}", session=session, call_id="bad-call")

    rows = {row.call_id: row for row in Invocation.objects.all()}
    assert rows["ok-call"].status == "ok" and rows["ok-call"].tool_name == "lookup"
    assert rows["bad-call"].status == "error" and rows["bad-call"].kind == "unknown_tool"
    assert rows["ok-call"].latency_ms > 0


def test_requests_without_a_key_get_401_with_an_error_envelope(client):
    response = client.post("/api/v1/invoke", {}, content_type="application/json")

    assert response.status_code == 401
    assert response.json()["kind"] == "forbidden"
    assert "Bearer" in response.json()["hint"]


def test_a_malformed_request_envelope_is_400_naming_the_fields(api):
    response = api.post("/api/v1/invoke", {"call": {"name": "x"}}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "error" and body["kind"] == "invalid_args"
    assert {d["path"] for d in body["details"]} >= {"/task_id", "/call/id"}


def test_a_body_that_is_not_json_is_400_invalid_json(api):
    response = api.post("/api/v1/invoke", "{not json", content_type="application/json")

    assert response.status_code == 400
    assert response.json()["kind"] == "invalid_json"


def test_repeating_the_same_call_id_is_a_retry_not_a_loop(api, publish_tool, session_for):
    publish_tool("lookup", loop_limit=1)
    session = session_for("u-1")

    bodies = [invoke(api, "lookup", '{"query": "x"}', session=session, call_id="same") for _ in range(3)]

    assert [b.json()["status"] for b in bodies] == ["ok", "ok", "ok"]
    assert (
        invoke(api, "lookup", '{"query": "x"}', session=session, call_id="new").json()["kind"]
        == "loop_detected"
    )


def test_a_call_refused_by_a_state_rule_stays_refused_when_retried(api, agent, publish_tool, session_for):
    version = publish_tool("lookup")
    TenantPolicy.objects.create(tenant=agent.tenant, tool=version.tool, task_call_budget=1)
    session = session_for("u-1")
    invoke(api, "lookup", '{"query": "a"}', session=session, call_id="c1")

    retries = [
        invoke(api, "lookup", '{"query": "b"}', session=session, call_id="c2").json() for _ in range(2)
    ]

    assert [r["kind"] for r in retries] == ["business_rule", "business_rule"]
