"""The demo external system's data, to watch what tool calls did (read-only), and the
payments upstream's one-shot faults an operator arms to make more uncertain outcomes."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from apps.common.admin import ReadOnlyAdminMixin, ToolHubAdmin, UnscopedOnlyAdminMixin, admin_actor

from .models import DemoOrder, DemoRefund, PaymentsFault
from .services import payments_fault_arm


@admin.register(DemoOrder)
class DemoOrderAdmin(ReadOnlyAdminMixin, UnscopedOnlyAdminMixin, ToolHubAdmin):
    list_display = ("order_id", "user_id", "status", "amount_cents", "currency", "placed_on", "cancel_reason")
    list_filter = ("status", "currency")
    search_fields = ("order_id", "user_id")
    date_hierarchy = "placed_on"
    ordering = ("order_id",)


@admin.register(DemoRefund)
class DemoRefundAdmin(ReadOnlyAdminMixin, UnscopedOnlyAdminMixin, ToolHubAdmin):
    list_display = ("refund_id", "order_id", "amount_cents", "created_at")
    search_fields = ("refund_id", "order_id", "idempotency_key")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


class PaymentsFaultForm(forms.ModelForm):
    class Meta:
        model = PaymentsFault
        fields = ("kind",)
        widgets = {"kind": forms.RadioSelect}
        help_texts = {
            "kind": "Armed once: the next refund_payment call (or status check) of any agent gets "
            "it. A timeout or a failure after recording leaves an unknown ledger entry that "
            "reconciliation settles; with status checks failing too it ends in the triage queue.",
        }


@admin.register(PaymentsFault)
class PaymentsFaultAdmin(UnscopedOnlyAdminMixin, ToolHubAdmin):
    """Add one to arm it; the list shows which were used, and when."""

    form = PaymentsFaultForm
    list_display = ("kind", "armed_by", "created_at", "used_at")
    list_filter = ("kind", ("used_at", admin.EmptyFieldListFilter))
    ordering = ("-created_at",)

    def get_fields(self, request: HttpRequest, obj: PaymentsFault | None = None) -> tuple[str, ...]:
        return ("kind", "armed_by", "created_at", "used_at") if obj else ("kind",)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: PaymentsFault, form: Any, change: bool) -> None:
        armed = payments_fault_arm(kind=obj.kind, actor=admin_actor(request))[0]
        obj.pk, obj.armed_by, obj.created_at = armed.pk, armed.armed_by, armed.created_at
