"""Audit events and the invocation log in the admin: read-only for everyone."""

from __future__ import annotations

from django.contrib import admin

from apps.common.admin import ReadOnlyAdminMixin, TenantScopedAdmin, json_display

from .models import AuditEvent, Invocation


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


@admin.register(Invocation)
class InvocationAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    list_display = ("created_at", "tenant", "agent_name", "tool_name", "version_number", "status", "kind",
                    "latency_ms", "dry_run", "task_id", "call_id")
    list_select_related = ("tenant", "agent")
    list_filter = ("status", "kind", "dry_run", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("task_id", "call_id", "tool_name")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = ("created_at", "tenant", "agent", "task_id", "call_id", "tool_name", "version_number", "status",
              "kind", "latency_ms", "args_chars", "result_chars", "execution_id", "dry_run", "envelope_json")
    readonly_fields = fields
    envelope_json = json_display("envelope")

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, obj: Invocation) -> str:
        return obj.agent.name
