"""Reads of the demo shop: a user's orders, refunds by idempotency key or order, the test knobs."""

from __future__ import annotations

from datetime import date

from django.core.cache import cache
from django.db.models import Sum

from apps.common.errors import NotFoundError

from .models import DemoOrder, DemoRefund

STATUS_ENDPOINT_DOWN_CACHE_KEY = "demo_shop:payments:status-endpoint-down"


def order_list_for_user(
    *, user_id: str, status: str, start: date, end: date, limit: int
) -> list[DemoOrder]:
    """The user's orders placed between `start` and `end` inclusive, oldest first.

    `status` is one of the order statuses, or `all` for any of them.
    """
    orders = DemoOrder.objects.filter(user_id=user_id, placed_on__range=(start, end))
    if status != "all":
        orders = orders.filter(status=status)
    return list(orders.order_by("placed_on", "order_id")[:limit])


def _order_not_found(order_id: str) -> NotFoundError:
    """The one answer for a missing order and for another user's order: they must look alike."""
    return NotFoundError(
        f"No order {order_id} was found for this user.",
        hint="Check the order id (format ORD-000123); search_orders lists this user's orders. "
        "Calling again with the same id will not find it.",
    )


def order_get_for_user(*, user_id: str, order_id: str) -> DemoOrder:
    """The user's order `order_id`. Raises NotFoundError when it is missing or someone else's."""
    order = DemoOrder.objects.filter(order_id=order_id, user_id=user_id).first()
    if order is None:
        raise _order_not_found(order_id)
    return order


def order_refundable_cents(*, user_id: str, order_id: str) -> tuple[DemoOrder, int] | None:
    """The user's order and what is left to refund of it (its amount less its refunds); None
    when it is missing or someone else's."""
    order = DemoOrder.objects.filter(order_id=order_id, user_id=user_id).first()
    if order is None:
        return None
    refunded = DemoRefund.objects.filter(order_id=order_id).aggregate(total=Sum("amount_cents"))["total"] or 0
    return order, order.amount_cents - refunded


def order_exists(*, order_id: str) -> bool:
    return DemoOrder.objects.filter(order_id=order_id).exists()


def refunds_of_order(*, order_id: str, limit: int) -> list[DemoRefund]:
    """The order's refunds, oldest first, at most `limit`."""
    return list(DemoRefund.objects.filter(order_id=order_id).order_by("created_at", "pk")[:limit])


def refund_get_by_key(*, idempotency_key: str) -> DemoRefund | None:
    return DemoRefund.objects.filter(idempotency_key=idempotency_key).first()


def status_endpoint_is_down() -> bool:
    return bool(cache.get(STATUS_ENDPOINT_DOWN_CACHE_KEY, False))
