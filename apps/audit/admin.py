"""Audit events in the admin: read-only for everyone. (The invocation log's admin, which
filters by catalog tool, is apps/gateway/admin.py.)"""

from __future__ import annotations

from django.contrib import admin

from apps.common.admin import ReadOnlyAdminMixin, TenantScopedAdmin, json_display

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    """Events without a tenant (the shared catalog) are shown to unscoped staff only."""

    list_display = ("at", "tenant", "actor", "action", "target_type", "target_id", "note")
    list_select_related = ("tenant",)
    list_filter = ("action", "target_type", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("actor", "action", "target_id", "note")
    date_hierarchy = "at"
    ordering = ("-at",)
    fields = ("at", "tenant", "actor", "action", "target_type", "target_id", "note", "data_json")
    readonly_fields = fields
    data_json = json_display("data")
