"""Request ids, the access log, refused request bodies, and a database outage answered as
503 outside the API."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import DataError
from django.http import HttpRequest, HttpResponse, JsonResponse

from .api import is_database_unavailable, to_toolhub_error
from .metrics import refusal_observed
from .request_body import body_refusal_error
from .request_context import REQUEST_ID_HEADER, bind_request_id, request_id_from
from .wsgi import BODY_REFUSAL_KEY

access_logger = logging.getLogger("toolhub.access")


def unbind_request_id_when_finished(**kwargs: Any) -> None:
    """request_finished receiver: the response is sent, so the request's id is over.

    The id stays bound until then, not only while the middleware runs, so the lines Django
    writes after the middleware chain (the "Internal Server Error" of django.request) have it.
    """
    bind_request_id(None)


class RequestIdMiddleware:
    """Takes the caller's `X-Request-ID` when it is safe (short, plain characters) or makes one,
    binds it for the request's log records and answers it in the same header.

    It also writes the access log line (gunicorn's own access log is off): one INFO record
    per request with method, path, status and duration. The query string is left out, so
    nothing a client put in a URL reaches the logs.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        bind_request_id(request_id)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        access_logger.info(
            "%s %s %s",
            request.method,
            request.path,
            response.status_code,
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )
        return response


class BodyRefusalMiddleware:
    """Answers a request whose body RequestBodyReader (apps/common/wsgi.py) refused, too
    large, too slow or cut, before any view or middleware that reads the body: with the
    error envelope, on every path."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = request.META.get(BODY_REFUSAL_KEY)
        if refusal is None:
            return self.get_response(request)
        error = body_refusal_error(refusal)
        refusal_observed(status=error.http_status, kind=error.kind)
        return JsonResponse(error.as_envelope(), status=error.http_status)


class DatabaseUnavailableMiddleware:
    """A database outage in a view outside the agent API (admin, demo upstream) answers 503
    with the same envelope as the API, instead of a 500 that reads like a bug; a value the
    database refused (DataError) answers 400, as the request's fault, not an outage."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DataError) and not is_database_unavailable(exception):
            return None
        error = to_toolhub_error(exception)
        assert error is not None
        refusal_observed(status=error.http_status, kind=error.kind)
        response = JsonResponse(error.as_envelope(), status=error.http_status)
        if error.retry_after_s is not None:
            response["Retry-After"] = str(int(error.retry_after_s))
        return response
