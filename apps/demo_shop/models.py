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


IDEMPOTENCY_KEY_CHARS = 600


class DemoRefund(models.Model):
    """A refund recorded by the payments upstream; one per Idempotency-Key, ever."""

    refund_id = models.CharField(max_length=32, unique=True)
    idempotency_key = models.CharField(max_length=IDEMPOTENCY_KEY_CHARS, unique=True)
    order_id = models.CharField(max_length=16, db_index=True)
    amount_cents = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.refund_id} {self.order_id} {self.amount_cents}"


class PaymentsFaultKind(models.TextChoices):
    TIMEOUT = "timeout", "the next refund times out (recorded, answered after refund_payment's timeout)"
    FAIL_AFTER = "fail_after", "the next refund fails after recording (HTTP 500)"
    FAIL_BEFORE = "fail_before", "the next refund fails before recording (HTTP 503)"
    STATUS_DOWN = "status_down", "the next refund status check fails (HTTP 503)"


class PaymentsFault(models.Model):
    """A fault the payments upstream injects once, into the next request of its kind.

    Stored in the database (not the cache) so that an operator's admin, a management
    command and the web server all see the same faults, whatever cache each process has.
    """

    kind = models.CharField(max_length=12, choices=PaymentsFaultKind.choices)
    armed_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(
        null=True, blank=True, help_text="When a request consumed it; empty: still armed."
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "payments fault"
        indexes = [models.Index(fields=["kind", "used_at", "created_at"], name="demo_fault_next")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} ({'used' if self.used_at else 'armed'})"
