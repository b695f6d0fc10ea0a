"""Code runs in the admin, as an operator reads them: the code, what it printed and returned or
what stopped it, every call its code made with its envelope, and the entries of its writes;
tenant staff see their tenant's runs only."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from apps.audit.models import Invocation
from apps.ledger.models import LedgerEntry
from tests.catalog.factories import published
from tests.factories import ToolFactory, code_run, inner_call, inner_write, run_python_version

from .conftest import TenantWorld, build_tenant_world

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:ledger_coderun_changelist")
JANUARY_TOTALS = """totals = {}
for order in tools.search_orders(status="paid", start_date="2026-01-01", end_date="2026-01-31", limit=100):
    totals[order["currency"]] = totals.get(order["currency"], 0) + order["amount_cents"]
print(len(totals), "currencies")
result = totals
"""
ORDERS = [
    {"order_id": "ORD-000011", "status": "paid", "amount_cents": 4200, "currency": "EUR",
     "placed_on": "2026-01-04"},
    {"order_id": "ORD-000017", "status": "paid", "amount_cents": 1999, "currency": "USD",
     "placed_on": "2026-01-19"},
]
CANCEL_ALL = """orders = tools.search_orders(status="pending", start_date="2026-01-01", end_date="2026-03-31")
print("cancelling", len(orders), "orders")
for order in orders:
    tools.cancel_order(order_id=order["order_id"], reason="customer_request")
"""


def change_url(entry: LedgerEntry) -> str:
    return reverse("admin:ledger_coderun_change", args=[entry.pk])


def entry_url(entry: LedgerEntry) -> str:
    return reverse("admin:ledger_ledgerentry_change", args=[entry.pk])


def run_invocations(run: LedgerEntry) -> list[Invocation]:
    return list(Invocation.objects.filter(parent_execution_id=run.pk).order_by("created_at", "id"))


def listed(client: Any, **filters: str) -> int:
    """How many runs the list shows."""
    return client.get(CHANGELIST, filters).content.decode().count('<td class="field-inner_calls">')


def january_totals(world: TenantWorld, **kwargs: Any) -> LedgerEntry:
    """A finished run: one search_orders call, the totals per currency as its result."""
    run = code_run(version=run_python_version(tenant=world.tenant), agent=world.agent, code=JANUARY_TOTALS,
                   result={"EUR": 4200, "USD": 1999}, stdout="2 currencies\n", calls=1, **kwargs)
    inner_call(run=run, n=1, tool="search_orders", envelope={"status": "ok", "call_id": "run_1#1",
                                                              "data": ORDERS})
    return run


def stopped_at_max_calls(world: TenantWorld) -> tuple[LedgerEntry, list[LedgerEntry]]:
    """A run stopped by its limit of calls, after two cancellations that stay committed."""
    run = code_run(
        version=run_python_version(tenant=world.tenant), agent=world.agent, code=CANCEL_ALL, state="failed",
        call_id="run_2", error={
            "status": "error", "call_id": "run_2", "kind": "business_rule", "recoverable": True,
            "message": "The code made more than 2 tool calls, the most a run may make; it was stopped at the "
                       "next one.",
            "hint": "Ask for more per call (a larger limit, a wider range) or split the work into "
                    "several runs.",
            "raw": {"stdout": "cancelling 3 orders\n", "calls": 3, "limit": "max_calls"},
        },
    )
    cancel_tool = ToolFactory(name="cancel_order", tenant=world.tenant)
    cancel = published(tool=cancel_tool, number=1, side_effect="write")
    inner_call(run=run, n=1, tool="search_orders", envelope={"status": "ok", "data": ORDERS})
    writes = []
    for n, order in ((2, "ORD-000011"), (3, "ORD-000017")):
        arguments = {"order_id": order, "reason": "customer_request"}
        write = inner_write(run=run, n=n, version=cancel, arguments=arguments)
        inner_call(run=run, n=n, tool="cancel_order", execution_id=write.pk,
                   envelope={"status": "ok", "data": {"order_id": order, "status": "cancelled"}})
        writes.append(write)
    return run, writes


def test_the_list_shows_each_run_its_calls_the_limit_it_hit_and_its_first_line(world, superuser):
    finished = january_totals(world.acme)
    stopped, _ = stopped_at_max_calls(world.globex)

    page = superuser.get(CHANGELIST).content.decode()

    assert change_url(finished) in page and change_url(stopped) in page
    assert "totals = {}" in page and "orders = tools.search_orders(status=&quot;pending&quot;" in page
    assert "max_calls" in page
    assert '<td class="field-inner_calls">1</td>' in page and '<td class="field-inner_calls">3</td>' in page
    assert '<td class="field-limit_hit">—</td>' in page
    # an entry of another tool is not a run
    assert change_url(world.acme.entry) not in page


def test_the_list_costs_a_bounded_number_of_queries(world, superuser, django_assert_max_num_queries):
    for n in range(6):
        january_totals(world.acme, task_id=f"t-{n}")
        stopped_at_max_calls(world.globex) if n == 0 else None
    superuser.get(CHANGELIST)  # warm per-process caches (content types, templates)

    with django_assert_max_num_queries(8):
        response = superuser.get(CHANGELIST)

    assert response.status_code == 200
    assert response.content.decode().count('<td class="field-inner_calls">') == 7


def test_a_finished_runs_page_shows_its_code_result_stdout_and_inner_calls(world, superuser):
    run = january_totals(world.acme)
    invocation = run_invocations(run)[0]

    page = superuser.get(change_url(run)).content.decode()

    assert '<pre id="run-code">totals = {}\nfor order in tools.search_orders(' in page
    assert '<pre id="run-stdout">2 currencies\n</pre>' in page
    assert "&quot;EUR&quot;: 4200" in page
    # the inner call, linking to its row of the invocation log, with its envelope
    assert reverse("admin:audit_invocation_change", args=[invocation.pk]) in page
    assert ">run_1#1</a>" in page and "search_orders" in page
    assert "ORD-000017" in page
    # and the run's own ledger entry
    assert entry_url(run) in page
    assert "The code made no write." in page


def test_a_run_stopped_by_a_limit_says_which_and_lists_the_writes_it_made_before(world, superuser):
    run, writes = stopped_at_max_calls(world.acme)

    page = superuser.get(change_url(run)).content.decode()

    assert '<strong id="run-limit">max_calls</strong>' in page
    assert "The code made more than 2 tool calls" in page and "split the work into several runs" in page
    assert '<pre id="run-stdout">cancelling 3 orders\n</pre>' in page
    assert page.count('<tr class="inner-call">') == 3 and page.count('<tr class="inner-entry">') == 2
    for write in writes:
        assert entry_url(write) in page
    assert ">run_2#3</a>" in page and "committed" in page


def test_a_run_stopped_by_an_exception_shows_its_traceback(world, superuser):
    traceback = ('Traceback (most recent call last):\n  File "<code>", line 2, in <module>\n'
                 "ZeroDivisionError: x")
    run = code_run(version=run_python_version(tenant=world.acme.tenant), agent=world.acme.agent,
                   code="x = 1\ny = x / 0\n", state="failed", error={
                       "status": "error", "kind": "invalid_args",
                       "message": "The code raised an exception: ZeroDivisionError: x",
                       "hint": "Fix the code and run it again with a new call id. It made no tool call.",
                       "raw": {"stdout": "", "calls": 0, "traceback": traceback}})

    page = superuser.get(change_url(run)).content.decode()

    assert "an exception raised by the code" in page
    assert 'File &quot;&lt;code&gt;&quot;, line 2' in page and "run-traceback" in page
    assert "(nothing printed)" in page and "The code called no tool." in page
    assert listed(superuser, stopped_by="exception") == 1
    assert listed(superuser, stopped_by="max_calls") == 0


def test_a_run_without_an_outcome_says_why(world, superuser):
    run = code_run(version=run_python_version(tenant=world.acme.tenant), agent=world.acme.agent,
                   code="result = 1", state="unknown")

    page = superuser.get(change_url(run)).content.decode()

    assert "the worker running the code stopped before it answered" in page


def test_an_inner_writes_entry_links_to_its_run_and_the_runs_entry_to_its_page(world, superuser):
    run, writes = stopped_at_max_calls(world.acme)

    inner, own, other = (superuser.get(entry_url(entry)).content.decode()
                         for entry in (writes[0], run, world.acme.entry))

    assert 'id="parent-run"' in inner and change_url(run) in inner and "run run_2" in inner
    assert 'id="code-run"' in own and change_url(run) in own
    assert "coderun" not in other


def test_an_entry_that_is_not_a_run_is_not_found_among_runs(world, superuser):
    response = superuser.get(change_url(world.acme.entry))

    assert response.status_code == 302  # the admin's "not found"


def test_runs_are_read_only_even_for_superusers(world, superuser):
    run = january_totals(world.acme)

    assert superuser.get(change_url(run)).context["adminform"].form.fields == {}
    assert superuser.post(change_url(run), {"state": "failed"}).status_code == 403
    assert superuser.get(reverse("admin:ledger_coderun_add")).status_code == 403
    delete = reverse("admin:ledger_coderun_delete", args=[run.pk])
    assert superuser.post(delete, {"post": "yes"}).status_code == 403
    assert LedgerEntry.objects.get(pk=run.pk).state == "committed"


def test_tenant_staff_see_their_tenants_runs_only(world, acme_staff):
    mine = january_totals(world.acme)
    theirs, their_writes = stopped_at_max_calls(world.globex)

    page = acme_staff.get(CHANGELIST).content.decode()
    foreign = acme_staff.get(change_url(theirs))
    foreign_write = acme_staff.get(entry_url(their_writes[0]))

    assert change_url(mine) in page and change_url(theirs) not in page
    assert "globex" not in page and "cancelling" not in page
    assert foreign.status_code == 302  # "not found", as for a missing run
    assert foreign_write.status_code == 302
    assert acme_staff.get(change_url(mine)).status_code == 200


def test_a_superuser_sees_every_tenants_runs(world, superuser):
    runs = [january_totals(world.acme), stopped_at_max_calls(world.globex)[0],
            january_totals(build_tenant_world("initech"))]

    page = superuser.get(CHANGELIST).content.decode()

    assert all(change_url(run) in page for run in runs)
    assert all(superuser.get(change_url(run)).status_code == 200 for run in runs)


def test_a_runs_page_lists_its_own_inner_calls_only(world, superuser):
    run = january_totals(world.acme)
    other = january_totals(world.acme, task_id="t-other")

    page = superuser.get(change_url(run)).content.decode()

    (mine,) = run_invocations(run)
    (not_mine,) = run_invocations(other)
    assert reverse("admin:audit_invocation_change", args=[mine.pk]) in page
    assert reverse("admin:audit_invocation_change", args=[not_mine.pk]) not in page
