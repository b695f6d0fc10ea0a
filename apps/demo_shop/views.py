"""The demo payments provider's HTTP API, described by its OpenAPI document (openapi.py). It
plays a third party, so it is plain Django with the provider's own error format
(`{"error": {"code", "message"}}`), not DRF.

The POST body is `{"order_id", "amount_cents"}`, plus the `user_id` ToolHub's http
executor sends along: when present, the order must be that user's.

Test knobs, query parameters of POST, make ambiguous outcomes reproducible:
`delay_ms=N` sleeps N ms before answering (after recording), `fail=before` answers 503
with nothing recorded, `fail=after` records the refund and then answers 500. The status
endpoint can be taken down with `services.set_status_endpoint_down`.

The same faults can be armed ahead, one request each, without touching the caller's URL
(`services.payments_fault_arm`, the admin's *Demo shop → Payments faults*): a refund
without knobs consumes the oldest armed refund fault, a status check a `status_down` one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from .api_keys import demo_api_key_matches
from .models import IDEMPOTENCY_KEY_CHARS, DemoRefund, PaymentsFaultKind
from .openapi import MAX_LISTED_REFUNDS, payments_openapi
from .selectors import order_exists, refund_get_by_key, refunds_of_order, status_endpoint_is_down
from .services import REFUND_FAULTS, RefundRefused, payments_fault_take, refund_create
from .tool_definitions import REFUND_PAYMENT

MAX_DELAY_MS = 60_000
# An armed timeout answers this long after recording: past refund_payment's seeded timeout.
TIMEOUT_FAULT_DELAY_MS = int(REFUND_PAYMENT["timeout_s"] * 1000) + 2000


class _BadRequest(Exception):
    """The request is malformed: answered 400 before anything else happens."""


@dataclass(frozen=True)
class _Knobs:
    delay_ms: int = 0
    fail: str = ""


@dataclass(frozen=True)
class _RefundInput:
    idempotency_key: str
    order_id: str
    amount_cents: int
    user_id: str | None


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _refund_json(refund: DemoRefund) -> dict[str, Any]:
    return {
        "refund_id": refund.refund_id,
        "order_id": refund.order_id,
        "amount_cents": refund.amount_cents,
        "idempotency_key": refund.idempotency_key,
        "created_at": refund.created_at.isoformat(),
    }


def _knobs(request: HttpRequest) -> _Knobs:
    fail = request.GET.get("fail", "")
    if fail not in ("", "before", "after"):
        raise _BadRequest("fail must be 'before' or 'after'.")
    try:
        delay_ms = int(request.GET.get("delay_ms", "0"))
    except ValueError:
        raise _BadRequest("delay_ms must be an integer number of milliseconds.") from None
    if not 0 <= delay_ms <= MAX_DELAY_MS:
        raise _BadRequest(f"delay_ms must be between 0 and {MAX_DELAY_MS}.")
    return _Knobs(delay_ms=delay_ms, fail=fail)


def _armed_knobs() -> _Knobs:
    """The knobs of the oldest armed refund fault, consumed; none armed: no knobs."""
    kind = payments_fault_take(kinds=REFUND_FAULTS)
    if kind == PaymentsFaultKind.TIMEOUT:
        return _Knobs(delay_ms=TIMEOUT_FAULT_DELAY_MS)
    if kind in (PaymentsFaultKind.FAIL_AFTER, PaymentsFaultKind.FAIL_BEFORE):
        return _Knobs(fail=kind.removeprefix("fail_"))
    return _Knobs()


def _nothing_recorded() -> JsonResponse:
    return _error(503, "unavailable", "The payments provider is unavailable; nothing was recorded.")


def _refund_input(request: HttpRequest) -> _RefundInput:
    key = request.headers.get("Idempotency-Key", "").strip()
    if not key:
        raise _BadRequest("The Idempotency-Key header is required: one key per refund you intend.")
    if len(key) > IDEMPOTENCY_KEY_CHARS:
        raise _BadRequest(f"The Idempotency-Key is longer than {IDEMPOTENCY_KEY_CHARS} characters.")
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        raise _BadRequest("The body must be a JSON object.") from None
    if not isinstance(body, dict):
        raise _BadRequest("The body must be a JSON object.")
    order_id, amount, user_id = body.get("order_id"), body.get("amount_cents"), body.get("user_id")
    if not isinstance(order_id, str) or not order_id:
        raise _BadRequest("order_id must be a non-empty string.")
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise _BadRequest("amount_cents must be an integer number of cents.")
    if user_id is not None and not isinstance(user_id, str):
        raise _BadRequest("user_id, when given, must be a string.")
    return _RefundInput(idempotency_key=key, order_id=order_id, amount_cents=amount, user_id=user_id)


@method_decorator(csrf_exempt, name="dispatch")
class _PaymentsView(View):
    """An endpoint of the provider: the API key first, a malformed request answered 400."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not demo_api_key_matches(request.headers.get("Authorization", "")):
            return _error(401, "unauthorized", "Send 'Authorization: Bearer <API key>' with a valid key.")
        try:
            return super().dispatch(request, *args, **kwargs)
        except _BadRequest as exc:
            return _error(400, "invalid_request", str(exc))


class RefundsView(_PaymentsView):
    """`POST /demo/payments/refunds` records a refund; `GET ?idempotency_key=K` looks one up."""

    http_method_names = ["get", "post"]

    def post(self, request: HttpRequest) -> HttpResponse:
        knobs = _knobs(request)
        if knobs.fail == "before":
            return _nothing_recorded()
        data = _refund_input(request)
        if knobs == _Knobs():
            knobs = _armed_knobs()
            if knobs.fail == "before":
                return _nothing_recorded()
        try:
            outcome = refund_create(
                idempotency_key=data.idempotency_key, order_id=data.order_id,
                amount_cents=data.amount_cents, user_id=data.user_id,
            )
        except RefundRefused as exc:
            return _error(exc.http_status, exc.code, exc.message)
        if knobs.delay_ms:
            time.sleep(knobs.delay_ms / 1000)
        if knobs.fail == "after":
            return _error(500, "internal_error", "The payments provider hit an internal error.")
        response = JsonResponse(_refund_json(outcome.refund), status=200 if outcome.replayed else 201)
        if outcome.replayed:
            response["Idempotent-Replayed"] = "true"
        return response

    def get(self, request: HttpRequest) -> HttpResponse:
        if status_endpoint_is_down() or payments_fault_take(kinds=(PaymentsFaultKind.STATUS_DOWN,)):
            return _error(503, "unavailable", "The refund status service is unavailable.")
        key = request.GET.get("idempotency_key", "")
        if not key:
            raise _BadRequest("The idempotency_key query parameter is required.")
        refund = refund_get_by_key(idempotency_key=key)
        if refund is None:
            return _error(404, "refund_not_found", "No refund was recorded with this idempotency key.")
        return JsonResponse(_refund_json(refund))


class OrderRefundsView(_PaymentsView):
    """`GET /demo/payments/orders/{order_id}/refunds`: the order's refunds, oldest first."""

    http_method_names = ["get"]

    def get(self, request: HttpRequest, order_id: str) -> HttpResponse:
        if not order_exists(order_id=order_id):
            return _error(404, "order_not_found", f"No order {order_id} exists.")
        refunds = refunds_of_order(order_id=order_id, limit=MAX_LISTED_REFUNDS)
        return JsonResponse([_refund_json(refund) for refund in refunds], safe=False)


def openapi_document_view(request: HttpRequest) -> HttpResponse:
    """`GET /demo/openapi.json`: the provider's OpenAPI document, its server on this host."""
    server_url = request.build_absolute_uri(reverse("demo-payments-refunds")).removesuffix("/refunds")
    return JsonResponse(payments_openapi(server_url=server_url))
