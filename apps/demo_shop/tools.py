"""The demo shop's `python` executors, reconcile hooks and state readers.

Each takes an ExecutionRequest whose arguments the gateway already validated and
normalized, with `user_id` filled from the session, and returns JSON-able data. Refusals
are `ExecutionRejected` carrying the error the model reads. `refund_payment` is not here:
it runs through the http executor against the payments upstream (views.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from apps.common.errors import NotFoundError, ToolHubError
from apps.gateway.callables import (
    ExecutionRejected,
    ExecutionRequest,
    ReconcileAnswer,
    reconcile_callable,
    tool_callable,
)
from apps.gateway.contracts import CallContext, StateLimit
from apps.gateway.state import state_reader

from .models import DemoOrder, OrderStatus
from .selectors import order_get_for_user, order_list_for_user, order_refundable_cents
from .services import order_cancel


def order_as_dict(order: DemoOrder) -> dict[str, Any]:
    return {
        "order_id": order.order_id,
        "status": order.status,
        "amount_cents": order.amount_cents,
        "currency": order.currency,
        "placed_on": order.placed_on.isoformat(),
    }


@tool_callable("demo_shop.search_orders")
def search_orders(request: ExecutionRequest) -> list[dict[str, Any]]:
    args = request.arguments
    orders = order_list_for_user(
        user_id=args["user_id"], status=args["status"],
        start=date.fromisoformat(args["start_date"]), end=date.fromisoformat(args["end_date"]),
        limit=args["limit"],
    )
    return [order_as_dict(order) for order in orders]


@tool_callable("demo_shop.get_order")
def get_order(request: ExecutionRequest) -> dict[str, Any]:
    try:
        order = order_get_for_user(
            user_id=request.arguments["user_id"], order_id=request.arguments["order_id"]
        )
    except ToolHubError as exc:
        raise ExecutionRejected(exc) from None
    return order_as_dict(order)


@state_reader("demo_shop.refundable_cents")
def refundable_cents(arguments: Mapping[str, Any], context: CallContext) -> StateLimit | None:
    """refund_payment's limit: what is left to refund of the session user's order (the user
    from the session, never from the arguments: no tool can learn another user's amounts
    through it). The payments provider checks it again when it refunds (racing refunds)."""
    order_id = arguments.get("order_id")
    if context.session is None or not isinstance(order_id, str):
        return None
    found = order_refundable_cents(user_id=context.session.subject, order_id=order_id)
    if found is None:
        return None
    order, left = found
    if left <= 0:
        return StateLimit(maximum=0, left=f"0 cents of order {order.order_id} are left to refund: it is "
                                            f"already refunded in full ({order.amount_cents} cents)")
    refunded = order.amount_cents - left
    return StateLimit(maximum=left, left=f"{left} cents of order {order.order_id} are left to refund "
                                         f"({refunded} of its {order.amount_cents} cents already refunded)")


@tool_callable("demo_shop.cancel_order")
def cancel_order(request: ExecutionRequest) -> dict[str, Any]:
    args = request.arguments
    try:
        order = order_cancel(user_id=args["user_id"], order_id=args["order_id"], reason=args["reason"])
    except ToolHubError as exc:
        raise ExecutionRejected(exc) from None
    return order_as_dict(order)


@reconcile_callable("demo_shop.cancel_order")
def cancel_order_outcome(request: ExecutionRequest) -> ReconcileAnswer:
    """Whether an uncertain cancel happened: the user's order is cancelled now, or not."""
    try:
        order = order_get_for_user(
            user_id=request.arguments["user_id"], order_id=request.arguments["order_id"]
        )
    except NotFoundError:
        return ReconcileAnswer(found=False, note="no such order for this user: nothing was cancelled")
    if order.status == OrderStatus.CANCELLED:
        return ReconcileAnswer(found=True, result=order_as_dict(order), note="the order is cancelled")
    return ReconcileAnswer(found=False, note=f"the order is still {order.status}")
