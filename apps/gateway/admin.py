"""The invocation log in the admin: read-only for everyone. It lives with the gateway, which
writes the log, because its tool filter offers the catalog's tools (audit sits below catalog)."""

from __future__ import annotations

from django.contrib import admin

from apps.audit.models import Invocation
from apps.catalog.admin_filters import ScopedToolNameFilter
from apps.common.admin import ExactSearchMixin, ReadOnlyAdminMixin, TenantScopedAdmin, json_display
from apps.common.admin_filters import AgeFilter, fixed_choices_filter
from apps.common.errors import ToolHubError
from apps.common.paginators import EstimatedCountPaginator

ENVELOPE_STATUSES = ["ok", "empty", "error", "accepted", "pending_approval"]


def _error_kinds() -> list[str]:
    """Every error kind of the contract (§3), from the one error hierarchy."""
    kinds, pending = set(), list(ToolHubError.__subclasses__())
    while pending:
        cls = pending.pop()
        kinds.add(cls.kind)
        pending += cls.__subclasses__()
    return sorted(kinds | {ToolHubError.kind})


@admin.register(Invocation)
class InvocationAdmin(ExactSearchMixin, ReadOnlyAdminMixin, TenantScopedAdmin):
    """Every call and its full envelope. Filters, search and counts stay index-bound, so the
    list is as fast with millions of rows as with a hundred (docs/performance.md)."""

    list_display = ("created_at", "tenant", "agent_name", "tool_name", "version_number", "status", "kind",
                    "latency_ms", "dry_run", "task_id", "call_id")
    list_select_related = ("tenant", "agent")
    list_filter = (fixed_choices_filter("status", "status", ENVELOPE_STATUSES),
                   fixed_choices_filter("kind", "error kind", _error_kinds()), ScopedToolNameFilter,
                   AgeFilter, "dry_run", ("tenant", admin.RelatedFieldListFilter))
    exact_search_fields = ("task_id", "call_id")
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # a count per filter choice: a scan of the table each
    paginator = EstimatedCountPaginator
    ordering = ("-created_at",)
    fields = ("created_at", "tenant", "agent", "task_id", "call_id", "tool_name", "version_number", "status",
              "kind", "latency_ms", "args_chars", "result_chars", "execution_id", "dry_run", "envelope_json")
    readonly_fields = fields
    envelope_json = json_display("envelope")

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, obj: Invocation) -> str:
        return obj.agent.name
