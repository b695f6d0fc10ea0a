"""The operators' dashboard: figures over a window, each linking to its list, scoped to a tenant."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import Invocation
from apps.dashboards.latency_buckets import RELATIVE_ERROR
from apps.dashboards.selectors import dashboard_overview
from apps.ledger.models import LedgerEntry
from tests.factories import ToolVersionFactory

from .conftest import build_tenant_world, logged_in
from .test_triage_admin import in_triage, member

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("admin:toolhub_dashboard")


def calls(world_tenant, *, status: str, kind: str = "", latency_ms: float, n: int = 1, hours_ago: float = 0):
    rows = Invocation.objects.bulk_create(
        Invocation(tenant=world_tenant.tenant, agent=world_tenant.agent, task_id="t", call_id=f"c{i}",
                   tool_name=world_tenant.tool.name, status=status, kind=kind, latency_ms=latency_ms)
        for i in range(n)
    )
    Invocation.objects.filter(pk__in=[r.pk for r in rows]).update(
        created_at=timezone.now() - timedelta(hours=hours_ago))


def test_the_overview_counts_calls_errors_latency_and_queues(world):
    calls(world.acme, status="ok", latency_ms=10, n=9)
    calls(world.acme, status="error", kind="invalid_args", latency_ms=100, n=1)
    calls(world.acme, status="ok", latency_ms=10, n=5, hours_ago=30)  # outside the 24 h window
    in_triage(world.acme.entry, hours_ago=30)
    LedgerEntry.objects.filter(pk=world.acme.entry.pk).update(created_at=timezone.now() - timedelta(hours=31))

    overview = dashboard_overview(tenant_id=world.acme.tenant.pk, window="1d")

    assert (overview.calls_total, overview.errors_total) == (11, 1)  # the world's call + 10
    assert overview.error_kinds == [("invalid_args", 1)]
    (latency,) = overview.latency
    assert (latency.tool, latency.calls, latency.errors) == ("acme_tool", 11, 1)
    # Percentiles from the latency buckets: within their documented resolution of PERCENTILE_CONT.
    assert latency.p50_ms == pytest.approx(10, rel=RELATIVE_ERROR)
    assert latency.p95_ms == pytest.approx(55, rel=RELATIVE_ERROR)
    assert overview.triage_size == 1
    assert [(key, n) for key, _, n in overview.unknown_by_age] == [("1h", 0), ("1h-1d", 0), ("1d-7d", 1),
                                                                  ("gt7d", 0)]
    assert [c.name for c in overview.capability_requests] == ["acme_wish"]


def test_the_page_draws_the_charts_from_the_local_library_and_links_every_figure(world, superuser):
    calls(world.acme, status="error", kind="timeout", latency_ms=5)

    response = superuser.get(DASHBOARD)

    html = response.content.decode()
    assert response.status_code == 200
    assert "/static/vendor/chartjs/chart.umd.min.js" in html and "cdn" not in html.lower()
    charts = response.context["charts"]
    assert charts["error_kinds"]["links"] == [
        f"{reverse('admin:audit_invocation_changelist')}?age=1d&status=error&kind=timeout"
    ]
    assert charts["unknown"]["links"][0].endswith("?state=unknown&age=1h")
    for link in [*charts["error_kinds"]["links"], *charts["unknown"]["links"], *charts["latency"]["links"]]:
        assert superuser.get(link).status_code == 200
    assert reverse("admin:ledger_triageentry_changelist") in html


def test_the_30_day_window_draws_a_bar_per_day_and_links_its_lists(world, superuser):
    calls(world.acme, status="error", kind="timeout", latency_ms=5, hours_ago=24 * 20)

    response = superuser.get(DASHBOARD, {"window": "30d"})

    charts = response.context["charts"]
    assert response.status_code == 200 and response.context["overview"].calls_total == 3
    assert len(charts["calls"]["labels"]) == 2  # the two tenants' calls of today, and 20 days ago
    assert charts["error_kinds"]["links"] == [
        f"{reverse('admin:audit_invocation_changelist')}?age=30d&status=error&kind=timeout"
    ]
    listed = superuser.get(charts["error_kinds"]["links"][0])
    assert listed.status_code == 200 and listed.context["cl"].result_count == 1


def test_every_figure_of_a_scoped_user_is_their_tenants(world):
    calls(world.globex, status="error", kind="forbidden", latency_ms=7, n=4)
    in_triage(world.globex.entry)
    ToolVersionFactory(tool=world.globex.tool, number=2, description="Globex secret tool.")
    operator = logged_in(member("olga", "operators", world.acme.tenant))

    response = operator.get(DASHBOARD)

    overview = response.context["overview"]
    assert (overview.calls_total, overview.errors_total, overview.triage_size) == (1, 0, 0)
    assert [t.tool for t in overview.latency] == ["acme_tool"]
    assert {tool for row in overview.lint for tool in row.tools} <= {"acme_tool", "shared_tool"}
    assert "globex" not in response.content.decode()


def test_staff_without_a_scope_see_no_figure(world, unscoped_staff):
    response = unscoped_staff.get(DASHBOARD)

    assert response.context["overview"] is None
    assert "not scoped to a tenant" in response.content.decode()


def test_the_dashboard_needs_the_invocation_view_permission(world):
    from django.contrib.auth.models import User

    nobody = logged_in(User.objects.create_user(username="n", password="pw", is_staff=True))

    assert nobody.get(DASHBOARD).status_code == 403


def test_the_dashboard_costs_the_same_queries_for_more_rows(world, superuser):
    superuser.get(DASHBOARD)
    with CaptureQueriesContext(connection) as few:
        superuser.get(DASHBOARD)

    for slug in ("initech", "umbrella"):
        more = build_tenant_world(slug)
        calls(more, status="ok", latency_ms=3, n=20)
        in_triage(more.entry)
    with CaptureQueriesContext(connection) as many:
        superuser.get(DASHBOARD)

    # the lint summary reads each tool's versions: a few queries per tool, none per call
    def without_lint(queries):
        return [q for q in queries if "catalog_" not in q["sql"]]

    assert len(without_lint(many.captured_queries)) == len(without_lint(few.captured_queries))
    assert LedgerEntry.objects.filter(triage_since__isnull=False).count() == 2
