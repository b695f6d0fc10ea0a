"""The operators' dashboard: one page of aggregated figures, each linking to the list behind it."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.common.admin import admin_scope

from .selectors import WINDOWS, Overview, dashboard_overview

VIEW_PERMISSION = "audit.view_invocation"


def dashboard_view(request: HttpRequest) -> HttpResponse:
    """Figures of the user's tenant (every tenant for unscoped superusers), over a window."""
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    scope = admin_scope(request)
    window = request.GET.get("window", "1d")
    if window not in WINDOWS:
        window = "1d"
    overview = None if scope.sees_nothing else dashboard_overview(tenant_id=scope.tenant_id, window=window)
    context = {
        **admin.site.each_context(request),
        "title": "Dashboard",
        "window": window,
        "windows": [("1h", "last hour"), ("1d", "last 24 hours"), ("7d", "last 7 days"),
                    ("30d", "last 30 days")],
        "overview": overview,
        "overview_scoped": scope.is_tenant,
        "links": _links(window),
        "charts": _charts(overview, window) if overview else {},
    }
    return TemplateResponse(request, "admin/dashboards/overview.html", context)


def _links(window: str) -> dict[str, str]:
    invocations = reverse("admin:audit_invocation_changelist")
    capabilities = reverse("admin:capabilities_capabilityrequest_changelist")
    return {
        "invocations": f"{invocations}?age={window}",
        "errors": f"{invocations}?age={window}&status=error",
        "ledger_unknown": f"{reverse('admin:ledger_ledgerentry_changelist')}?state=unknown",
        "triage": reverse("admin:ledger_triageentry_changelist"),
        "code_runs": f"{reverse('admin:ledger_coderun_changelist')}?age={window}",
        "approvals": reverse("admin:ledger_pendingapproval_changelist"),
        "capabilities": f"{capabilities}?reason=unknown",
        "phase_misses": f"{capabilities}?reason=not_in_phase",
        "versions": reverse("admin:catalog_toolversion_changelist"),
        "drift": f"{reverse('admin:catalog_driftfinding_changelist')}?review=open",
    }


def _charts(overview: Overview, window: str) -> dict[str, Any]:
    """Data of the charts, with the list each bar or point opens."""
    links = _links(window)
    time_format = {"7d": "%a %H:%M", "30d": "%b %d"}.get(window, "%H:%M")
    return {
        "calls": {
            "labels": [row["bucket"].strftime(time_format) for row in overview.calls_over_time],
            "series": [
                {"label": status, "data": [row.get(status, 0) for row in overview.calls_over_time],
                 "link": f"{links['invocations']}&status={status}"}
                for status in overview.statuses
            ],
        },
        "error_kinds": {
            "labels": [kind for kind, _ in overview.error_kinds],
            "data": [n for _, n in overview.error_kinds],
            "links": [f"{links['errors']}&kind={quote(kind)}" for kind, _ in overview.error_kinds],
        },
        "latency": {
            "labels": [t.tool for t in overview.latency],
            "p50": [round(t.p50_ms, 1) for t in overview.latency],
            "p95": [round(t.p95_ms, 1) for t in overview.latency],
            "links": [f"{links['invocations']}&tool_name={quote(t.tool)}" for t in overview.latency],
        },
        "unknown": {
            "labels": [label for _, label, _ in overview.unknown_by_age],
            "data": [n for _, _, n in overview.unknown_by_age],
            "links": [f"{links['ledger_unknown']}&age={key}" for key, _, _ in overview.unknown_by_age],
        },
    }
