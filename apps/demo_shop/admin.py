"""The demo external system's data, to watch what tool calls did: read-only."""

from __future__ import annotations

from django.contrib import admin

from apps.common.admin import ReadOnlyAdminMixin, ToolHubAdmin, UnscopedOnlyAdminMixin

from .models import DemoOrder, DemoRefund


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
