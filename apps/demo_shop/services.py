"""Writes of the demo shop: cancelling orders, recording refunds, the test knobs."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.core.cache import cache
from django.db import IntegrityError, transaction

from apps.common.errors import BusinessRuleError

from .models import DemoOrder, DemoRefund, OrderStatus
from .selectors import (
    STATUS_ENDPOINT_DOWN_CACHE_KEY,
    order_get_for_user,
    refund_get_by_key,
)

# --- orders ----------------------------------------------------------------------------

CANCELLABLE_STATUSES = (OrderStatus.PENDING, OrderStatus.PAID)


def order_cancel(*, user_id: str, order_id: str, reason: str) -> DemoOrder:
    """Cancel the user's pending or paid order, recording `reason`. Writes the order.

    A conditional UPDATE (only while still pending or paid) makes concurrent cancels of
    one order change it exactly once. Raises NotFoundError when the order is missing or
    another user's, BusinessRuleError when it is already cancelled.
    """
    changed = DemoOrder.objects.filter(
        order_id=order_id, user_id=user_id, status__in=CANCELLABLE_STATUSES
    ).update(status=OrderStatus.CANCELLED, cancel_reason=reason)
    order = order_get_for_user(user_id=user_id, order_id=order_id)
    if not changed:
        raise BusinessRuleError(
            f"Order {order_id} is already cancelled; nothing was changed.",
            hint="Do not call cancel_order for it again: tell the user it is already cancelled. "
            "get_order shows its current state.",
        )
    return order


# --- payments upstream -----------------------------------------------------------------


class RefundRefused(Exception):
    """A documented refusal of the payments provider; nothing was recorded.

    The provider plays a third party with its own error format, so this is not a
    ToolHubError: the http executor maps its status code to an error kind.
    """

    def __init__(self, *, code: str, message: str, http_status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


@dataclass(frozen=True)
class RefundOutcome:
    refund: DemoRefund
    replayed: bool  # True: the key was seen before and this is the first request's refund


def _replay(refund: DemoRefund, *, order_id: str, amount_cents: int) -> RefundOutcome:
    if (refund.order_id, refund.amount_cents) != (order_id, amount_cents):
        raise RefundRefused(
            code="idempotency_key_reused",
            message=f"This Idempotency-Key was already used for a refund of {refund.amount_cents} "
            f"cents on order {refund.order_id}, not {amount_cents} cents on {order_id}. "
            "Use a new key for a different refund.",
            http_status=409,
        )
    return RefundOutcome(refund=refund, replayed=True)


def _check_refundable(*, order_id: str, amount_cents: int, user_id: str | None) -> None:
    if amount_cents < 1:
        raise RefundRefused(
            code="invalid_amount",
            message=f"amount_cents must be at least 1, got {amount_cents}.", http_status=422,
        )
    orders = DemoOrder.objects.filter(order_id=order_id)
    if user_id is not None:
        orders = orders.filter(user_id=user_id)
    order = orders.first()
    if order is None:
        raise RefundRefused(
            code="order_not_found", message=f"No order {order_id} exists for this customer.",
            http_status=404,
        )
    if amount_cents > order.amount_cents:
        raise RefundRefused(
            code="amount_exceeds_order",
            message=f"amount_cents {amount_cents} is more than the order's amount "
            f"({order.amount_cents} cents).",
            http_status=422,
        )


def refund_create(
    *, idempotency_key: str, order_id: str, amount_cents: int, user_id: str | None = None
) -> RefundOutcome:
    """Record a refund once per idempotency key. Writes a DemoRefund.

    A replay of a key answers the first refund; the unique constraint on the key, not the
    lookup before it, is what keeps concurrent duplicates to one row. When `user_id` is
    given (ToolHub sends the session's), the order must be that user's. Raises
    RefundRefused: order_not_found, invalid_amount, amount_exceeds_order, or
    idempotency_key_reused when the key came with another order or amount.
    """
    existing = refund_get_by_key(idempotency_key=idempotency_key)
    if existing is not None:
        return _replay(existing, order_id=order_id, amount_cents=amount_cents)
    _check_refundable(order_id=order_id, amount_cents=amount_cents, user_id=user_id)
    try:
        with transaction.atomic():
            refund = DemoRefund.objects.create(
                refund_id=f"re_{secrets.token_hex(12)}", idempotency_key=idempotency_key,
                order_id=order_id, amount_cents=amount_cents,
            )
    except IntegrityError:
        winner = refund_get_by_key(idempotency_key=idempotency_key)
        if winner is None:
            raise
        return _replay(winner, order_id=order_id, amount_cents=amount_cents)
    return RefundOutcome(refund=refund, replayed=False)


def set_status_endpoint_down(down: bool) -> None:
    """Test knob: while down, GET /demo/payments/refunds answers 503 (shared through the cache)."""
    if down:
        cache.set(STATUS_ENDPOINT_DOWN_CACHE_KEY, True, timeout=None)
    else:
        cache.delete(STATUS_ENDPOINT_DOWN_CACHE_KEY)
