"""The admin's lists as an operator reads them: latency in ms, ids that fit, empty lists that
explain themselves, readable titles, and the icon."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib.staticfiles import finders
from django.urls import reverse

from apps.audit.models import Invocation
from apps.dashboards.console import sample_arguments
from apps.dashboards.selectors import dashboard_overview
from apps.demo_shop.tool_definitions import SEARCH_ORDERS

from .test_dashboard import calls

pytestmark = pytest.mark.django_db

LONG_TASK = "task-" + "x" * 60


def test_the_invocation_log_shows_latency_in_ms_and_long_ids_cut_whole_in_the_title(world, superuser):
    Invocation.objects.filter(pk=world.acme.invocation.pk).update(latency_ms=3.445786999975553,
                                                                  task_id=LONG_TASK)

    page = superuser.get(reverse("admin:audit_invocation_changelist")).content.decode()

    assert "3.4 ms" in page and "3.445" not in page
    assert f'title="{LONG_TASK}"' in page
    assert LONG_TASK[:20] in page


@pytest.mark.parametrize(
    ("changelist", "sentence"),
    [
        ("ledger_triageentry", "wait here for a person to check the external system"),
        ("ledger_pendingapproval", "wait here: a version with an approval rule"),
        ("ledger_coderun", "Every <code>run_python</code> call gets a row here"),
        ("capabilities_capabilityrequest", "What agents wanted and could not call is counted here"),
        ("demo_shop_paymentsfault", "to make the next <code>refund_payment</code> call time out"),
    ],
)
def test_an_empty_list_says_what_would_appear_there_and_how(world, superuser, changelist, sentence):
    apps.get_model(*changelist.rsplit("_", 1)).objects.all().delete()

    page = superuser.get(reverse(f"admin:{changelist}_changelist")).content.decode()

    assert 'id="empty-list"' in page and sentence in page


def test_a_list_emptied_by_a_filter_says_so_and_offers_them_all(world, superuser):
    url = reverse("admin:ledger_ledgerentry_changelist")

    page = superuser.get(url, {"state__exact": "unknown"}).content.decode()

    assert "Nothing matches these filters." in page and "Every write an agent makes" in page


def test_a_list_with_rows_has_no_explanation(world, superuser):
    page = superuser.get(reverse("admin:ledger_ledgerentry_changelist")).content.decode()

    assert 'id="empty-list"' not in page


def test_the_triage_queue_counts_as_triage_queue_n(world, superuser):
    page = superuser.get(reverse("admin:ledger_triageentry_changelist")).content.decode()

    assert "Triage queue (0)" in page and "0 triage queue" not in page


def test_a_ledger_entry_is_titled_by_tool_task_call_and_state(world, superuser):
    entry = world.acme.entry

    page = superuser.get(reverse("admin:ledger_ledgerentry_change", args=[entry.pk])).content.decode()

    title = f"{entry.tool.name} · task {entry.task_id} · call {entry.call_id} · {entry.state}"
    assert str(entry) == title
    assert title in page


def test_the_latency_chart_lists_only_tools_that_exist(world):
    calls(world.acme, status="ok", latency_ms=12.0, n=2)
    Invocation.objects.create(tenant=world.acme.tenant, agent=world.acme.agent, task_id="t", call_id="u",
                              tool_name="issue_voucher", status="error", kind="unknown_tool", latency_ms=1.0)

    overview = dashboard_overview(tenant_id=world.acme.tenant.pk, window="1d")

    assert [t.tool for t in overview.latency] == [world.acme.tool.name]


def test_the_dashboard_shows_latency_in_ms(world, superuser):
    calls(world.acme, status="ok", latency_ms=3.445786999975553)

    page = superuser.get(reverse("admin:toolhub_dashboard")).content.decode()

    # One decimal of a percentile read from latency buckets (within 4.4 % of 3.45 ms).
    assert re.search(r"\b3\.[3-6] ms", page)


def test_try_it_starts_a_search_on_a_month_the_demo_has_orders_for():
    sample = sample_arguments(SEARCH_ORDERS["parameters"], SEARCH_ORDERS["context_bindings"])

    assert (sample["start_date"], sample["end_date"]) == ("2026-01-01", "2026-01-31")


def test_the_favicon_is_linked_from_the_admin_and_served_at_the_root(world, superuser, client):
    page = superuser.get(reverse("admin:index")).content.decode()
    redirect = client.get("/favicon.ico")

    assert 'rel="icon"' in page and "toolhub/favicon.ico" in page
    assert redirect.status_code == 301 and redirect["Location"].endswith("toolhub/favicon.ico")
    assert finders.find("toolhub/favicon.ico")
