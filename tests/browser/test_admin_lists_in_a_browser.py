"""The operator's lists in a real browser at 1440 px: nothing overflows, ids are there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from apps.audit.models import Invocation
from tests.browser.conftest import log_in
from tests.factories import AgentFactory, TenantFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TASK = "support-ticket-48213-refund-" + "x" * 40


@pytest.fixture
def wide_page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


def test_the_invocation_log_fits_1440_px_and_shows_task_and_call_ids(live_server, wide_page):
    # given: calls with long names and ids
    tenant = TenantFactory(slug="acme-corporation-europe")
    agent = AgentFactory(tenant=tenant, name="customer-support-assistant")
    Invocation.objects.bulk_create(
        Invocation(tenant=tenant, agent=agent, task_id=TASK, call_id=f"call_{n}_abcdefghijklmnopqrstuvwxyz",
                   tool_name="search_orders_by_customer_and_date", version_number=3, status="error",
                   kind="idempotency_conflict", latency_ms=1234.5678, dry_run=n % 2 == 0)
        for n in range(20)
    )
    User.objects.create_superuser(username="root", password="pw")
    log_in(wide_page, f"{live_server.url}/admin", "root", "pw")

    # when
    wide_page.goto(f"{live_server.url}/admin/audit/invocation/")

    # then
    # The admin scrolls a wide table inside its own box: compare the table with that box too.
    overflow = wide_page.evaluate("""() => Math.max(
        document.documentElement.scrollWidth - window.innerWidth,
        document.querySelector("#result_list").scrollWidth
            - document.querySelector(".results").clientWidth)""")
    assert overflow <= 0, f"the list is {overflow} px wider than the window"
    first_task = wide_page.locator("#result_list td.field-task span").first
    assert first_task.get_attribute("title") == TASK
    assert first_task.is_visible() and first_task.inner_text().startswith("support-ticket")
    assert wide_page.locator("#result_list td.field-call").first.inner_text().startswith("call_")
    assert "1,234.6 ms" in wide_page.locator("#result_list").inner_text()


def test_an_empty_triage_queue_says_what_would_be_there(live_server, wide_page):
    User.objects.create_superuser(username="root", password="pw")
    log_in(wide_page, f"{live_server.url}/admin", "root", "pw")

    wide_page.goto(f"{live_server.url}/admin/ledger/triageentry/")

    explained = wide_page.locator("#empty-list")
    assert explained.is_visible()
    assert "wait here for a person to check the external system" in explained.inner_text()
    assert "Triage queue (0)" in wide_page.locator(".paginator").inner_text()
    explained.get_by_role("link", name="Payments faults").click()
    assert wide_page.url.endswith("/admin/demo_shop/paymentsfault/")
