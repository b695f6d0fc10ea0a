"""Writes of the demo shop: cancelling orders, recording refunds, the test knobs (the seed is
seed.py)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from apps.audit.services import audit_record
from apps.common.errors import BusinessRuleError

from .models import DemoOrder, DemoRefund, OrderStatus, PaymentsFault, PaymentsFaultKind
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


def _locked_order(*, order_id: str, amount_cents: int, user_id: str | None) -> DemoOrder:
    """The order to refund, its row locked until the refund is recorded (concurrent refunds
    of one order are counted one after the other)."""
    if amount_cents < 1:
        raise RefundRefused(
            code="invalid_amount",
            message=f"amount_cents must be at least 1, got {amount_cents}.", http_status=422,
        )
    orders = DemoOrder.objects.select_for_update().filter(order_id=order_id)
    if user_id is not None:
        orders = orders.filter(user_id=user_id)
    order = orders.first()
    if order is None:
        raise RefundRefused(
            code="order_not_found", message=f"No order {order_id} exists for this customer.",
            http_status=404,
        )
    return order


def _check_refundable(*, order: DemoOrder, amount_cents: int) -> None:
    """Refuse a refund past what is left of the order: its amount less earlier refunds."""
    if amount_cents > order.amount_cents:
        raise RefundRefused(
            code="amount_exceeds_order",
            message=f"amount_cents {amount_cents} is more than the order's amount "
            f"({order.amount_cents} cents).",
            http_status=422,
        )
    refunded = (
        DemoRefund.objects.filter(order_id=order.order_id).aggregate(total=Sum("amount_cents"))["total"] or 0
    )
    refundable = order.amount_cents - refunded
    if amount_cents > refundable:
        raise RefundRefused(
            code="amount_exceeds_refundable",
            message=(
                f"Order {order.order_id} is already refunded in full ({refunded} cents); nothing is "
                "left to refund."
                if refundable <= 0 else
                f"Only {refundable} cents of order {order.order_id} are left to refund ({refunded} of "
                f"its {order.amount_cents} cents are already refunded), not {amount_cents}."
            ),
            http_status=409,
        )


def refund_create(
    *, idempotency_key: str, order_id: str, amount_cents: int, user_id: str | None = None
) -> RefundOutcome:
    """Record a refund once per idempotency key. Writes a DemoRefund.

    A replay of a key answers the first refund; the unique constraint on the key, not the
    lookup before it, is what keeps concurrent duplicates to one row. When `user_id` is
    given (ToolHub sends the session's), the order must be that user's. The refunds of an
    order never add up to more than its amount (its row is locked while one is recorded).
    Raises RefundRefused: order_not_found, invalid_amount, amount_exceeds_order,
    amount_exceeds_refundable (409, naming what is left), or idempotency_key_reused when
    the key came with another order or amount.
    """
    existing = refund_get_by_key(idempotency_key=idempotency_key)
    if existing is not None:
        return _replay(existing, order_id=order_id, amount_cents=amount_cents)
    try:
        with transaction.atomic():
            order = _locked_order(order_id=order_id, amount_cents=amount_cents, user_id=user_id)
            # A duplicate of this request may have been recorded while we waited for the lock.
            if (existing := refund_get_by_key(idempotency_key=idempotency_key)) is not None:
                return _replay(existing, order_id=order_id, amount_cents=amount_cents)
            _check_refundable(order=order, amount_cents=amount_cents)
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


def payments_fault_arm(*, kind: str, actor: str, times: int = 1) -> list[PaymentsFault]:
    """Arm `times` one-shot faults of `kind` for the payments upstream. Writes the faults and
    an audit event; the next matching requests consume them, oldest first."""
    with transaction.atomic():
        faults = [PaymentsFault.objects.create(kind=kind, armed_by=actor) for _ in range(times)]
        audit_record(actor=actor, action="demo_payments.fault_arm", target=faults[0],
                     data={"kind": kind, "times": times})
    return faults


def payments_fault_take(*, kinds: tuple[str, ...]) -> str | None:
    """Consume the oldest armed fault of one of `kinds`; its kind, or None when none is armed.

    A conditional UPDATE claims it, so two concurrent requests never take the same fault.
    """
    while True:
        fault_id = (
            PaymentsFault.objects.filter(kind__in=kinds, used_at__isnull=True)
            .order_by("created_at", "pk").values_list("pk", flat=True).first()
        )
        if fault_id is None:
            return None
        if PaymentsFault.objects.filter(pk=fault_id, used_at__isnull=True).update(used_at=timezone.now()):
            return PaymentsFault.objects.values_list("kind", flat=True).get(pk=fault_id)


REFUND_FAULTS = (PaymentsFaultKind.TIMEOUT, PaymentsFaultKind.FAIL_AFTER, PaymentsFaultKind.FAIL_BEFORE)
