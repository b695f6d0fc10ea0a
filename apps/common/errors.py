"""The one error hierarchy of ToolHub.

Every error a model or an integrator can see is a `ToolHubError` with a fixed `kind`
(contract §3), whether retrying can help (`recoverable`), a `message` saying what went
wrong and a `hint` saying what to do next. Pipeline stages raise them; the envelope
builder and the DRF exception handler turn them into JSON.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .request_context import current_request_id

# The fields a detail may carry besides `path` and `problem`, in the order they are sent.
REPAIR_FIELDS = (
    "allowed", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
    "format", "pattern", "expected_type", "missing", "unexpected", "default", "example",
    "swap", "split",
)


@dataclass(frozen=True)
class ErrorDetail:
    """One problem at one place in the arguments (a JSON pointer such as `/end_date`).

    `repair` holds the fix as data a program can apply without reading the hint (contract
    §3): keys from REPAIR_FIELDS, each only when it applies.
    """

    path: str
    problem: str
    repair: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "problem": self.problem}
        # Null means "leave it out" on the wire: a field that does not apply is not sent.
        out.update((key, self.repair[key]) for key in REPAIR_FIELDS if self.repair.get(key) is not None)
        return out


class ToolHubError(Exception):
    kind: ClassVar[str] = "internal"
    recoverable: ClassVar[bool] = False
    # Tool errors are observations for the model: HTTP 200 unless the request itself is bad.
    # The class gives the default; one raise may pass its own (`http_status=`).
    http_status: int = 200

    def __init__(
        self,
        message: str,
        *,
        hint: str,
        details: list[ErrorDetail] | tuple[ErrorDetail, ...] = (),
        retry_after_s: float | None = None,
        http_status: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = tuple(details)
        self.retry_after_s = retry_after_s
        self.extra = extra or {}
        if http_status is not None:
            self.http_status = http_status

    def as_envelope(self, *, call_id: str | None = None, tool: str | None = None) -> dict[str, Any]:
        envelope: dict[str, Any] = {"status": "error", "call_id": call_id}
        if tool is not None:
            envelope["tool"] = tool
        envelope.update(
            kind=self.kind,
            recoverable=self.recoverable,
            message=self.message,
            hint=self.hint,
            details=[d.as_dict() for d in self.details],
            raw=None,
        )
        if self.retry_after_s is not None:
            envelope["retry_after_s"] = self.retry_after_s
        envelope.update(self.extra)
        return envelope


class UnknownToolError(ToolHubError):
    kind = "unknown_tool"
    recoverable = True


class InvalidJsonError(ToolHubError):
    kind = "invalid_json"
    recoverable = True


class InvalidArgsError(ToolHubError):
    kind = "invalid_args"
    recoverable = True


class BusinessRuleError(ToolHubError):
    kind = "business_rule"
    recoverable = True


class NotFoundError(ToolHubError):
    kind = "not_found"
    recoverable = False


class ForbiddenError(ToolHubError):
    kind = "forbidden"
    recoverable = False


class RateLimitedError(ToolHubError):
    kind = "rate_limited"
    recoverable = True


class LoopDetectedError(ToolHubError):
    kind = "loop_detected"
    recoverable = True


class InProgressError(ToolHubError):
    kind = "in_progress"
    recoverable = True


class IdempotencyConflictError(ToolHubError):
    kind = "idempotency_conflict"
    recoverable = False


class ToolTimeoutError(ToolHubError):
    kind = "timeout"
    recoverable = False


class OutcomeUnknownError(ToolHubError):
    kind = "outcome_unknown"
    recoverable = False


class UpstreamError(ToolHubError):
    kind = "upstream_error"
    recoverable = False


class UnavailableError(ToolHubError):
    kind = "unavailable"
    recoverable = False


class InternalError(ToolHubError):
    """A bug. Its envelope carries the error id and the request id, both in the log line."""

    kind = "internal"
    recoverable = False

    def __init__(self, *, error_id: str | None = None) -> None:
        self.error_id = error_id or uuid.uuid4().hex
        self.request_id = current_request_id()
        super().__init__(
            f"ToolHub hit an internal error (error id {self.error_id}).",
            hint="This is a bug in ToolHub, not in your call. Do not retry the same call; "
            f"report error id {self.error_id} to the operators.",
            extra={"error_id": self.error_id, "request_id": self.request_id},
        )


ERROR_KINDS: dict[str, type[ToolHubError]] = {
    cls.kind: cls
    for cls in (
        UnknownToolError, InvalidJsonError, InvalidArgsError, BusinessRuleError, NotFoundError,
        ForbiddenError, RateLimitedError, LoopDetectedError, InProgressError,
        IdempotencyConflictError, ToolTimeoutError, OutcomeUnknownError, UpstreamError,
        UnavailableError, InternalError,
    )
}
