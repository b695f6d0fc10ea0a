"""Liveness and readiness probes, the Prometheus scrape, and the 404 of URLs nothing matches."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.views.defaults import page_not_found
from prometheus_client import CONTENT_TYPE_LATEST

from toolhub.celery import app as celery_app

from .errors import NotFoundError
from .metrics import metrics_text, scrape_authorized


def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and serving; checks nothing else."""
    return JsonResponse({"status": "ok"})


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def _broker_ok() -> bool:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
        return True
    except Exception:  # noqa: BLE001 - any broker failure means "not ready"
        return False


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready only when the database and the broker both answer; otherwise 503."""
    checks = {"database": _database_ok(), "broker": _broker_ok()}
    ready = all(checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status=200 if ready else 503,
    )


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format; with TOOLHUB_METRICS_TOKEN set, only for `Bearer <token>`."""
    if not scrape_authorized(request.headers.get("Authorization", "")):
        response = HttpResponse(
            "Send 'Authorization: Bearer <TOOLHUB_METRICS_TOKEN>'.\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask /favicon.ico of every page that names none (the API docs, JSON answers)."""
    return HttpResponsePermanentRedirect(static("toolhub/favicon.ico"))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """An error envelope under /api/, where every non-2xx answer is one (a mistyped path, an id
    that is not a UUID); Django's page elsewhere."""
    if not request.path.startswith("/api/"):
        return page_not_found(request, exception)
    error = NotFoundError(
        "Nothing of the API is at this URL.",
        hint="Check the path and the ids in it against the API reference at /api/docs/.",
    )
    return JsonResponse(error.as_envelope(), status=404)
