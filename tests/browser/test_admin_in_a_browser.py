"""A curator and an operator at work in a real browser, on the real admin.

One journey, in order: log in, create a tool and a draft, see a lint finding, fix it,
publish, try it in the console, open the dashboard, settle a triage entry, approve a call.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

import tests.gateway.callables  # noqa: F401  (registers the tests.echo executor)
from apps.catalog.models import Tool, ToolVersion, VersionStatus
from apps.gateway.contracts import VersionSpec
from apps.gateway.pipeline.normalize import args_hash
from apps.ledger.models import Approval, LedgerEntry, LedgerState, ReconcileAttempt
from apps.tenancy.models import Grant
from tests.browser.conftest import log_in
from tests.factories import AgentFactory, TenantFactory, ToolFactory
from tests.gateway.conftest import QUERY_SCHEMA

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LEAKY_SCHEMA = {"type": "object", "properties": {"sql": {"type": "string", "description": "Raw SQL to run."}},
                "required": ["sql"], "additionalProperties": False}
GOOD_SCHEMA = {"type": "object", "properties": {"query": {"type": "string", "description": "Words to find."}},
               "required": ["query"], "additionalProperties": False}


def _operations_backlog(tenant, agent) -> tuple[LedgerEntry, Approval]:
    """An entry reconciliation gave up on, and a refund waiting for approval."""
    tool = ToolFactory(name="refund", tenant=tenant)
    version = ToolVersion.objects.create(
        tool=tool, number=1, description="Refunds an order. At most its amount. Never twice.",
        parameters=QUERY_SCHEMA, side_effect="write", executor="python",
        executor_config={"callable": "tests.echo"}, approval={"always": True},
        context_bindings={"user_id": {"source": "session.subject", "policy": "must_match"}},
    )
    ToolVersion.objects.filter(pk=version.pk).update(status=VersionStatus.PUBLISHED)
    version.refresh_from_db()

    def entry(call_id: str, arguments: dict, **fields) -> LedgerEntry:
        hashed = args_hash(arguments, VersionSpec.from_model(version))
        return LedgerEntry.objects.create(
            tenant=tenant, agent=agent, key=f"acme/t-1/{call_id}/refund/{hashed}", task_id="t-1",
            call_id=call_id, tool=tool, version=version, subject="u-1", args_hash=hashed,
            arguments=arguments, **fields,
        )

    stuck = entry("call_1", {"query": "order 7", "user_id": "u-1"}, state=LedgerState.UNKNOWN,
                  triage_since=timezone.now() - timedelta(hours=3), attempts=3)
    ReconcileAttempt.objects.create(entry=stuck, answer="unclear", note="provider timed out",
                                    actor="reconciler")
    waiting = entry("call_2", {"query": "order 9", "user_id": "u-1"}, run_async=True)
    approval = Approval.objects.create(
        entry=waiting, tenant=tenant, version=version, args_hash=waiting.args_hash,
        reason="refund always needs an operator's approval.", expires_at=timezone.now() + timedelta(hours=1),
    )
    return stuck, approval


def _set_json(page, selector: str, value: dict) -> None:
    page.fill(selector, json.dumps(value, indent=2))


def test_a_curator_and_an_operator_at_work(live_server, page):
    tenant = TenantFactory(slug="acme")
    agent = AgentFactory(tenant=tenant, name="helper")
    User.objects.create_superuser(username="admin", password="pw-for-browser")
    stuck, approval = _operations_backlog(tenant, agent)
    page.on("dialog", lambda dialog: dialog.accept())
    admin = f"{live_server.url}/admin"

    log_in(page, admin, "admin", "pw-for-browser")
    assert page.locator("#site-name").inner_text().strip().endswith("ToolHub")

    # create a tool, then a draft version of it with a leaky parameter
    page.goto(f"{admin}/catalog/tool/add/")
    page.fill("#id_name", "find_things")
    page.select_option("#id_tenant", value=str(tenant.pk))
    page.click("input[name=_save]")
    tool = Tool.objects.get(name="find_things")
    page.goto(f"{admin}/catalog/toolversion/add/")
    page.select_option("#id_tool", value=str(tool.pk))
    page.fill("#id_description", "Finds things. At most 20 results. Do not use it to change anything.")
    _set_json(page, "#id_parameters", LEAKY_SCHEMA)
    page.select_option("#id_side_effect", "readonly")
    page.select_option("#id_executor", "python")
    _set_json(page, "#id_executor_config", {"callable": "tests.echo"})
    page.click("input[name=_continue]")

    # the lint finding is on the page and publishing is blocked
    lint = page.locator("#lint")
    assert "1 error" in lint.inner_text()
    assert "parameters/properties/sql" in lint.inner_text()
    expect(page.locator(".errornote", has_text="Publishing is blocked")).to_be_visible()

    # fix it: the finding goes away; publish
    _set_json(page, "#id_parameters", GOOD_SCHEMA)
    page.click("input[name=_continue]")
    assert "No findings" in page.locator("#lint").inner_text()
    page.fill("form[action$='/do/publish/'] input[name=note]", "first release")
    page.click("form[action$='/do/publish/'] button")
    expect(page.locator(".messagelist .success", has_text="Published find_things v1.")).to_be_visible()
    assert ToolVersion.objects.get(tool=tool).status == VersionStatus.PUBLISHED

    # try it as the tenant's agent: the envelope the model would read
    Grant.objects.create(tenant=tenant, agent=agent, tool=tool)
    page.click("a.toolhub-try-link")
    page.select_option("#id_agent", value=str(agent.pk))
    page.fill("#id_subject", "u-1")
    page.fill("#id_arguments", '{"query": "blue shoes"}')
    page.click("input[name=_run]")
    envelope = json.loads(page.locator("#envelope pre").inner_text())
    assert envelope["status"] == "ok" and envelope["dry_run"] is True
    assert envelope["data"]["would_run"]["arguments"] == {"query": "blue shoes"}

    # the dashboard draws its charts from the local library
    page.goto(f"{admin}/dashboard/")
    page.wait_for_function("() => Object.keys(Chart.instances).length >= 3")
    assert page.locator("#card-triage .toolhub-figure").inner_text() == "1"
    assert page.locator("#card-approvals .toolhub-figure").inner_text() == "1"

    # settle the triage entry with a note and the result
    page.click("#card-triage")
    page.locator("#result_list a", has_text="refund").first.click()
    page.get_by_text("provider timed out", exact=True).wait_for()
    page.fill("#settle-committed-result", '{"refund_id": "re_77"}')
    page.fill("#settle-committed-note", "Found re_77 in the provider's dashboard.")
    page.click("#action-settle-committed button")
    expect(page.locator(".messagelist .success", has_text="Settled as committed.")).to_be_visible()
    stuck.refresh_from_db()
    assert stuck.state == LedgerState.COMMITTED and stuck.result == {"refund_id": "re_77"}

    # approve the pending call with a note
    page.goto(f"{admin}/ledger/pendingapproval/")
    page.locator("#result_list a", has_text="refund").first.click()
    page.get_by_text("order 9").first.wait_for()
    page.fill("#approve-note", "Customer confirmed by phone.")
    page.click("#action-approve button")
    expect(page.locator(".messagelist .success", has_text="The call is approved.")).to_be_visible()
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by == "admin:admin"
    expect(page.locator(".field-decided_by", has_text="admin:admin")).to_be_visible()
