"""Admin of drift findings: what MCP servers changed in their tools since the versions made
from them were published, each with a diff of the pinned and the current definition, to be
marked reviewed (the pinned version stays) or adopted in a new draft. Findings are written
only by the sync (apps/imports/sync.py); here they are read, reviewed and adopted, each
through a service that audits it."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from apps.catalog.admin_filters import ScopedToolFilter
from apps.catalog.models import DriftFinding, DriftKind
from apps.catalog.previews import definition_diff
from apps.catalog.services import drift_finding_review
from apps.common.admin import (
    TenantScopedAdmin,
    admin_actor,
    json_display,
    redirect_to_change,
    validation_message,
)
from apps.common.admin_buttons import ObjectButton, ObjectButtonsMixin

from .adopt import drift_finding_new_draft
from .errors import ImportRefused
from .sync import upstream_label_of

NEW_DRAFT_PERMISSION = "catalog.add_toolversion"
# Findings with no current definition to draft from.
NO_DEFINITION = (DriftKind.REMOVED, DriftKind.INCOMPLETE)


class ReviewFilter(admin.SimpleListFilter):
    title = "review"
    parameter_name = "review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("open", "open"), ("reviewed", "reviewed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "open":
            return queryset.filter(reviewed_at__isnull=True)
        if self.value() == "reviewed":
            return queryset.filter(reviewed_at__isnull=False)
        return queryset


@admin.register(DriftFinding)
class DriftFindingAdmin(ObjectButtonsMixin, TenantScopedAdmin):
    change_form_template = "admin/catalog/driftfinding/change_form.html"
    list_display = ("upstream_tool", "kind", "tool_version", "upstream_name", "owner", "detected_at",
                    "review")
    list_display_links = ("upstream_tool", "kind")
    list_select_related = ("tenant", "upstream__tenant", "tool", "version")
    list_filter = (ReviewFilter, "kind", ScopedToolFilter, ("upstream", admin.RelatedOnlyFieldListFilter),
                   ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("upstream_tool", "tool__name")
    ordering = ("-detected_at", "-pk")
    actions = ("mark_reviewed", "new_draft_from_upstream")
    fields = ("upstream_name", "upstream_tool", "kind", "tool_version", "owner", "created_at", "detected_at",
              "problem", "reviewed_at", "reviewed_by", "review_note", "pinned_json", "current_json")
    readonly_fields = fields

    pinned_json = json_display("pinned", "pinned definition (what the published version was made from)")
    current_json = json_display("current", "current definition (what the server lists now)")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.has_perm(NEW_DRAFT_PERMISSION):
            actions.pop("new_draft_from_upstream", None)
        return actions

    @admin.display(description="upstream", ordering="upstream__name")
    def upstream_name(self, obj: DriftFinding) -> str:
        return upstream_label_of(obj.upstream)

    @admin.display(description="owner", ordering="tenant__slug")
    def owner(self, obj: DriftFinding) -> str:
        return obj.tenant.slug

    @admin.display(description="pinned version")
    def tool_version(self, obj: DriftFinding) -> Any:
        if obj.tool is None:
            return "— (no tool yet)"
        label = f"{obj.tool.name} v{obj.version.number}" if obj.version is not None else obj.tool.name
        if obj.version is None:
            return label
        return format_html('<a href="{}">{}</a>',
                           reverse("admin:catalog_toolversion_change", args=[obj.version.pk]), label)

    @admin.display(description="review", ordering="reviewed_at")
    def review(self, obj: DriftFinding) -> Any:
        if obj.is_open:
            return format_html('<span class="toolhub-badge toolhub-warning">{}</span>', "open")
        return f"reviewed by {obj.reviewed_by}"

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        finding = self.get_object(request, unquote(object_id))
        context = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False,
                   **(extra_context or {})}
        if finding is not None:
            pinned = f"pinned ({finding.tool.name} v{finding.version.number})" \
                if finding.tool is not None and finding.version is not None else "pinned (none)"
            context["drift_diff"] = definition_diff(finding.pinned, finding.current, before_name=pinned,
                                                    after_name="listed now")
        return super().change_view(request, object_id, form_url, context)

    def object_buttons(self, request: HttpRequest, obj: DriftFinding) -> list[ObjectButton]:
        if not obj.is_open or not self.has_change_permission(request, obj):
            return []
        buttons = [ObjectButton("review", "Mark reviewed", text_field="note",
                                text_placeholder="note (audit log)")]
        if obj.kind not in NO_DEFINITION and request.user.has_perm(NEW_DRAFT_PERMISSION):
            buttons.append(ObjectButton("new-draft", "New draft from upstream"))
        return buttons

    def run_object_button(self, request: HttpRequest, obj: DriftFinding, name: str) -> HttpResponse:
        if name == "review":
            self._review(request, obj, note=request.POST.get("note", "").strip())
            return redirect_to_change(self, obj)
        return self._new_draft(request, obj) or redirect_to_change(self, obj)

    def _review(self, request: HttpRequest, finding: DriftFinding, *, note: str = "") -> bool:
        try:
            drift_finding_review(finding=finding, actor=admin_actor(request), note=note)
        except ValidationError as error:
            messages.error(request, validation_message(error))
            return False
        return True

    def _new_draft(self, request: HttpRequest, finding: DriftFinding) -> HttpResponse | None:
        try:
            result = drift_finding_new_draft(finding=finding, actor=admin_actor(request))
        except ImportRefused as refused:
            messages.error(request, f"{finding}: no draft was made. {refused}")
            return None
        version = result.version
        if version is None:
            return None
        named = f"{version.tool.name} v{version.number} ({version.status})"
        messages.success(request, f"Made {named} from what {finding.upstream.name} lists now; the "
                                  "finding is reviewed. Review the draft, then publish it.")
        return HttpResponseRedirect(reverse("admin:catalog_toolversion_change", args=[version.pk]))

    @admin.action(description="Mark reviewed (keep the pinned version)", permissions=["change"])
    def mark_reviewed(self, request: HttpRequest, queryset: QuerySet[DriftFinding]) -> None:
        reviewed = [f for f in queryset.filter(reviewed_at__isnull=True) if self._review(request, f)]
        if reviewed:
            messages.success(request, f"Marked {len(reviewed)} finding(s) reviewed; the pinned versions "
                                      "keep serving, and suspended tools answer again.")

    @admin.action(description="New draft from upstream (adopt the current definition)",
                  permissions=["change"])
    def new_draft_from_upstream(self, request: HttpRequest, queryset: QuerySet[DriftFinding]) -> None:
        for finding in queryset.filter(reviewed_at__isnull=True).select_related("upstream", "tenant"):
            # Adopting an earlier one of the same tool may have reviewed this one already.
            finding.refresh_from_db(fields=["reviewed_at", "reviewed_by"])
            if finding.is_open:
                self._new_draft(request, finding)
