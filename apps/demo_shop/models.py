"""The demo external system: an order book and a payments provider's refunds."""

from __future__ import annotations

from django.db import models


class OrderStatus(models.TextChoices):
    PENDING = "pending"
    PAID = "paid"
    CANCELLED = "cancelled"


class DemoOrder(models.Model):
    order_id = models.CharField(max_length=16, unique=True)
    user_id = models.CharField(max_length=32, db_index=True)
    status = models.CharField(max_length=10, choices=OrderStatus.choices)
    amount_cents = models.PositiveIntegerField()
    currency = models.CharField(max_length=3, default="EUR")
    placed_on = models.DateField(db_index=True)
    cancel_reason = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["order_id"]

    def __str__(self) -> str:
        return self.order_id


class DemoRefund(models.Model):
    """A refund recorded by the payments upstream; one per Idempotency-Key, ever."""

    refund_id = models.CharField(max_length=32, unique=True)
    idempotency_key = models.CharField(max_length=600, unique=True)
    order_id = models.CharField(max_length=16, db_index=True)
    amount_cents = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.refund_id} {self.order_id} {self.amount_cents}"
