"""The DRF exception handler: every non-2xx answer is an error envelope (contract §2)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, DataError, NotSupportedError, ProgrammingError
from rest_framework import exceptions as drf
from rest_framework.response import Response

from .errors import (
    ErrorDetail,
    ForbiddenError,
    InternalError,
    InvalidArgsError,
    InvalidJsonError,
    NotFoundError,
    RateLimitedError,
    ToolHubError,
    UnavailableError,
)
from .jsontext import printable
from .metrics import refusal_observed
from .request_body import BodyCut, BodyReadTimeout, body_refusal_error

logger = logging.getLogger("toolhub.api")


def _validation_details(data: Any, prefix: str = "") -> list[ErrorDetail]:
    if isinstance(data, dict):
        out: list[ErrorDetail] = []
        for key, value in data.items():
            path = prefix if key == "non_field_errors" else f"{prefix}/{printable(str(key))}"
            out.extend(_validation_details(value, path))
        return out
    if isinstance(data, list):
        if all(isinstance(item, str) for item in data):
            return [ErrorDetail(path=prefix or "/", problem=printable(str(item))) for item in data]
        out = []
        for index, item in enumerate(data):
            out.extend(_validation_details(item, f"{prefix}/{index}"))
        return out
    return [ErrorDetail(path=prefix or "/", problem=printable(str(data)))]


def is_database_unavailable(exc: Exception) -> bool:
    """A database error that may pass with time; not a query this database cannot run
    (NotSupportedError, ProgrammingError: a bug, which waiting does not fix), nor a value it
    refused (DataError: the request's fault)."""
    return isinstance(exc, DatabaseError) and not isinstance(
        exc, (DataError, NotSupportedError, ProgrammingError)
    )


def to_toolhub_error(exc: Exception) -> ToolHubError | None:
    """Translate framework exceptions into ToolHub errors; None for unknown exceptions."""
    if isinstance(exc, ToolHubError):
        return exc
    if isinstance(exc, (RequestDataTooBig, BodyReadTimeout, BodyCut)):
        return body_refusal_error(exc)
    if isinstance(exc, drf.ParseError):
        return InvalidJsonError(
            f"The request body is not valid JSON: {exc.detail}",
            hint="Send a JSON object encoded as UTF-8 with Content-Type: application/json.",
            http_status=400,
        )
    if isinstance(exc, drf.UnsupportedMediaType):
        return InvalidJsonError(
            f"Unsupported content type: {exc.detail}",
            hint="Send the body as JSON with Content-Type: application/json.",
            http_status=415,
        )
    if isinstance(exc, drf.ValidationError):
        return InvalidArgsError(
            "The request envelope is malformed.",
            hint="Fix the fields listed in details; the API reference is at /api/docs/.",
            details=_validation_details(exc.detail),
            http_status=400,
        )
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        return ForbiddenError(
            str(exc.detail),
            hint="Send 'Authorization: Bearer <agent key>' with a key that is active; "
            "an operator can issue one with `manage.py issue_agent_key`.",
            http_status=401,
        )
    if isinstance(exc, drf.PermissionDenied):
        return ForbiddenError(str(exc.detail), hint="This agent may not do this.", http_status=403)
    if isinstance(exc, drf.NotFound):
        return NotFoundError(
            str(exc.detail), hint="Check the id; it may belong to another tenant.", http_status=404
        )
    if isinstance(exc, drf.MethodNotAllowed):
        return InvalidArgsError(
            str(exc.detail), hint="See /api/docs/ for the methods of this path.", http_status=405
        )
    if isinstance(exc, drf.Throttled):
        wait = float(exc.wait or 1)  # type: ignore[attr-defined]  # set by __init__; the stubs omit it
        return RateLimitedError(
            "This agent sends requests faster than its limit.",
            hint=f"Wait {wait:.0f} s before the next request.",
            retry_after_s=wait,
            http_status=429,
        )
    if isinstance(exc, DataError):
        # The database is there and refused a value (a NUL, a lone surrogate, a number out of
        # range): the request's fault, which waiting does not mend. Inputs are checked before
        # they reach the database; this answers what a check missed.
        logger.error("database refused a value: %s", type(exc).__name__)
        return InvalidArgsError(
            "ToolHub's database refused a value of this request: text with a NUL character or a "
            "lone surrogate, or a number out of range.",
            hint="Find that value in the request, correct it and send the request again; the same "
            "request unchanged is refused the same way.",
            details=[ErrorDetail(path="/", problem="holds a value the database cannot store")],
            http_status=400,
        )
    if is_database_unavailable(exc):
        logger.error("database unavailable: %s", type(exc).__name__)
        # A write already recorded in the ledger may have run before the database went
        # away, so the answer never says "nothing happened" and never suggests new call ids:
        # the same call ids replay a call that ran instead of running it twice.
        return UnavailableError(
            "ToolHub cannot reach its database right now; this request did not complete.",
            hint="This is temporary on ToolHub's side. Wait a few seconds, then send the same "
            "request again with the same task_id and call ids: a call that already ran answers "
            "with its recorded outcome instead of running twice.",
            retry_after_s=5,
            http_status=503,
        )
    return None


@dataclass(frozen=True)
class ErrorAnswer:
    """What the agent API answers for an exception: the envelope, its HTTP status and headers."""

    envelope: dict[str, Any]
    status: int
    headers: dict[str, str]


def error_answer(exc: Exception) -> ErrorAnswer:
    """The answer to an exception raised while serving a request of the agent API, counted in
    toolhub_refusals_total; an unknown exception is logged as an internal error."""
    error = to_toolhub_error(exc)
    if error is None:
        error = InternalError()
        logger.exception(
            "internal error %s", error.error_id, exc_info=exc, extra={"error_id": error.error_id}
        )
    headers = {}
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(int(error.retry_after_s + 0.999))
    if error.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="toolhub"'
    status = error.http_status if error.http_status != 200 else 400
    if isinstance(error, InternalError):
        status = 500
    refusal_observed(status=status, kind=error.kind)
    return ErrorAnswer(envelope=error.as_envelope(), status=status, headers=headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    answer = error_answer(exc)
    return Response(answer.envelope, status=answer.status, headers=answer.headers)
