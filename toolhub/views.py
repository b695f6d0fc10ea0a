"""Liveness and readiness probes and the Prometheus scrape."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST

from toolhub.celery import app as celery_app
from toolhub.metrics import metrics_text, scrape_authorized


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
