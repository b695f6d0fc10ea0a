"""The invocation log in the admin: read-only for everyone. It lives with the gateway, which
writes the log, because its tool filter offers the catalog's tools (audit sits below catalog)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html
from django.utils.text import Truncator

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

    # Fits a 1440 px window: long names are cut (whole in their title, on hover), ids wrap.
    list_display = ("created_at", "tenant_name", "agent_name", "tool", "outcome", "latency", "task", "call")
    list_select_related = ("tenant", "agent")
    list_filter = (fixed_choices_filter("status", "status", ENVELOPE_STATUSES),
                   fixed_choices_filter("kind", "error kind", _error_kinds()), ScopedToolNameFilter,
                   AgeFilter, "dry_run", ("tenant", admin.RelatedFieldListFilter))
    exact_search_fields = ("task_id", "call_id")
    search_help_text = "A whole task id or call id, not a word of one (e.g. demo-20261201-221821-loop)."
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # a count per filter choice: a scan of the table each
    paginator = EstimatedCountPaginator
    ordering = ("-created_at",)
    fields = ("created_at", "tenant", "agent", "task_id", "call_id", "tool_name", "version_number", "status",
              "kind", "latency", "args_chars", "result_chars", "execution_id", "dry_run", "envelope_json")
    readonly_fields = fields
    envelope_json = json_display("envelope")

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, obj: Invocation) -> str:
        return obj.agent.name

    @admin.display(description="tenant", ordering="tenant__slug")
    def tenant_name(self, obj: Invocation) -> str:
        return shortened(str(obj.tenant), 16)

    @admin.display(description="tool", ordering="tool_name")
    def tool(self, obj: Invocation) -> str:
        name = shortened(obj.tool_name, 22)
        if obj.version_number is None:
            return name
        return format_html('{} <span class="quiet">v{}</span>', name, obj.version_number)

    @admin.display(description="outcome", ordering="status")
    def outcome(self, obj: Invocation) -> str:
        outcome = f"{obj.status}: {obj.kind}" if obj.kind else obj.status
        if obj.dry_run:
            return format_html('{}<br><span class="quiet">dry run</span>', outcome)
        return outcome

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj: Invocation) -> str:
        return milliseconds(obj.latency_ms)

    @admin.display(description="task", ordering="task_id")
    def task(self, obj: Invocation) -> str:
        return whole_id(obj.task_id)

    @admin.display(description="call", ordering="call_id")
    def call(self, obj: Invocation) -> str:
        return whole_id(obj.call_id)


def milliseconds(value: float | None) -> str:
    """A latency as people read it: "3.4 ms"."""
    return "–" if value is None else f"{value:,.1f} ms"


def whole_id(text: str) -> str:
    """An id as it is, wrapped within its column rather than cut: ids that differ only at the
    end (the demo's tasks) must stay apart."""
    return format_html('<span class="toolhub-id toolhub-id-wrapped" title="{}">{}</span>', text, text)


def shortened(text: str, chars: int) -> str:
    """`text` cut to `chars` with an ellipsis; the whole text in the title (shown on hover)."""
    if len(text) <= chars:
        return format_html('<span class="toolhub-id">{}</span>', text)
    return format_html('<span class="toolhub-id" title="{}">{}</span>', text, Truncator(text).chars(chars))
