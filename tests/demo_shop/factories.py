"""Factories and request builders of the demo shop tests."""

from __future__ import annotations

from datetime import date
from typing import Any

import factory

from apps.demo_shop.models import DemoOrder
from apps.gateway.executors.base import ExecutionRequest


class DemoOrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DemoOrder

    order_id = factory.Sequence(lambda n: f"ORD-{900000 + n:06d}")
    user_id = "u-1001"
    status = "paid"
    amount_cents = 5_000
    placed_on = date(2026, 3, 1)


def execution_request(tool: str, **arguments: Any) -> ExecutionRequest:
    """A request as the gateway hands it to a python executor: arguments already validated."""
    return ExecutionRequest(
        tenant_slug="demo", task_id="t-1", call_id="call_1", tool_name=tool, version_number=1,
        arguments=arguments, timeout_s=5.0, config={}, subject=arguments.get("user_id", ""),
    )
