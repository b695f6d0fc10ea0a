"""Every URL pattern is either checked by the isolation matrix or allowed here, with a reason.

A new endpoint or admin page therefore fails this test until someone decides: add an API
case (test_isolation_api.API_CASES), make its admin parameters fillable
(admin_matrix.FILLERS), or allow it below and say why it shows no tenant's data.
"""

from __future__ import annotations

from .admin_matrix import mount, uncovered_admin_routes
from .routes import Route, all_routes
from .test_isolation_api import API_CASES

ALLOWED: dict[str, str] = {
    "api/schema/": "The OpenAPI document: the same for every caller, no tenant's data (tests/fuzz reads it).",
    "api/docs/": "The Swagger UI page that renders /api/schema/.",
    "api/redoc/": "The ReDoc page that renders /api/schema/.",
    "healthz": "Liveness probe: answers {'status': 'ok'} and nothing else.",
    "readyz": "Readiness probe: whether the database and the broker answer.",
    "metrics": "Prometheus scrape for operators: aggregate counters and gauges, no tenant's rows; "
    "production requires TOOLHUB_METRICS_TOKEN (tests/ops/test_metrics.py).",
    "demo/payments/refunds": "The demo's fake payments provider: an external system with its own key.",
    "demo/payments/orders/<str:order_id>/refunds": "The same provider's list of an order's refunds, "
    "behind its own key: demo data only.",
    "demo/openapi.json": "The same provider's OpenAPI document: the same for every caller, no data.",
    "demo/orders/search": "The demo shop's own ungoverned order search (the bench baseline): demo data only.",
    "demo/orders/cancel": "The demo shop's own ungoverned cancel (the write bench baseline), behind the "
    "shop's API key: demo data only.",
    "favicon.ico": "A redirect to the static icon: the same for everyone.",
    "admin/(?P<url>.*)$": "The admin's catch-all: a 404 or a login redirect for URLs nobody registered.",
}


def _covered(route: Route, admin_gaps: set[str]) -> bool:
    if route.path in ALLOWED or route.name in API_CASES:
        return True
    return route.path.startswith(mount()) and route.path not in admin_gaps


def test_every_url_pattern_is_in_the_isolation_matrix_or_allowed():
    admin_gaps = {route.path for route in uncovered_admin_routes()}

    missing = [route.path for route in all_routes() if not _covered(route, admin_gaps)]

    assert not missing, (
        "URL patterns the tenant isolation matrix does not check: "
        f"{', '.join(missing)}. Add a case to tests/security/test_isolation_api.py API_CASES, a "
        "filler to tests/security/admin_matrix.py FILLERS, or an entry with a reason to ALLOWED."
    )


def test_the_allow_list_names_only_patterns_that_exist():
    stale = set(ALLOWED) - {route.path for route in all_routes()}

    assert not stale, f"remove from ALLOWED: {', '.join(sorted(stale))}"


def test_the_matrix_has_no_case_for_an_endpoint_that_is_gone():
    stale = set(API_CASES) - {route.name for route in all_routes()}

    assert not stale, f"remove from API_CASES: {', '.join(sorted(stale))}"
