"""The side-effect ledger in the admin: read-only for everyone, each entry with its timeline.

Settling unknown entries is the triage queue's job (ledger services), never a form edit.
"""

from __future__ import annotations

from django.contrib import admin

from apps.common.admin import ReadOnlyAdminMixin, ReadOnlyInline, TenantScopedAdmin, json_display

from .models import LedgerEntry, LedgerEvent


class LedgerEventInline(ReadOnlyInline):
    model = LedgerEvent
    fields = ("at", "from_state", "to_state", "actor", "note", "data_json")
    readonly_fields = fields
    data_json = json_display("data")
    verbose_name_plural = "timeline"


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    list_display = (
        "created_at",
        "tenant",
        "agent_name",
        "tool",
        "version_number",
        "task_id",
        "call_id",
        "state",
        "attempts",
        "settled_at",
    )
    list_select_related = ("tenant", "agent", "tool", "version")
    list_filter = (
        "state",
        ("tenant", admin.RelatedOnlyFieldListFilter),
        ("tool", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("key", "task_id", "call_id", "subject")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = (
        "key",
        "state",
        "tenant",
        "agent",
        "tool",
        "version",
        "subject",
        "task_id",
        "call_id",
        "args_hash",
        "arguments_json",
        "result_json",
        "error_json",
        "attempts",
        "next_check_at",
        "settled_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = (LedgerEventInline,)

    arguments_json = json_display("arguments")
    result_json = json_display("result")
    error_json = json_display("error", "stored error envelope")

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, obj: LedgerEntry) -> str:
        return obj.agent.name

    @admin.display(description="version", ordering="version__number")
    def version_number(self, obj: LedgerEntry) -> int:
        return obj.version.number
