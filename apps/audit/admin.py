"""Audit events in the admin: read-only for everyone. (The invocation log's admin, which
filters by catalog tool, is apps/gateway/admin.py.)"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin

from apps.common.admin import ExactSearchMixin, ReadOnlyAdminMixin, TenantScopedAdmin, json_display
from apps.common.admin_filters import AgeFilter, MonthFilter, indexed_values_filter
from apps.common.paginators import EstimatedCountPaginator

from .models import AuditEvent


class EventAgeFilter(AgeFilter):
    date_field = "at"


class EventMonthFilter(MonthFilter):
    date_field = "at"
    # Every month retention keeps a day of.
    months = settings.TOOLHUB_AUDIT_RETENTION_DAYS // 30 + 2


@admin.register(AuditEvent)
class AuditEventAdmin(ExactSearchMixin, ReadOnlyAdminMixin, TenantScopedAdmin):
    """Events without a tenant (the shared catalog) are shown to unscoped staff only.

    Filters, search and counts stay index-bound, as on the invocation log, so the list is as
    fast with millions of events as with a hundred (docs/performance.md)."""

    list_display = ("at", "tenant", "actor", "action", "target_type", "target_id", "note")
    list_select_related = ("tenant",)
    list_filter = (indexed_values_filter("action", "action"),
                   indexed_values_filter("target_type", "target type"),
                   EventAgeFilter, EventMonthFilter, ("tenant", admin.RelatedFieldListFilter))
    # Exact values: an actor ("admin:alice", "agent:…"), an action, a target's id.
    exact_search_fields = ("actor", "action", "target_id")
    search_help_text = "An actor (admin:alice), an action (tool_version.publish) or a target id, exactly."
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # a count per filter choice: a scan of the table each
    paginator = EstimatedCountPaginator
    ordering = ("-at",)
    fields = ("at", "tenant", "actor", "action", "target_type", "target_id", "note", "data_json")
    readonly_fields = fields
    data_json = json_display("data")
