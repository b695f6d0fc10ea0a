"""Admin of the catalog: tools and their versions through draft → published → deprecated →
retired (toolsets with phases: admin_toolsets.py). Published versions are read-only; every
change goes through apps/catalog/services.py so it is audited and seen by the gateway at
once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from apps.common.admin import (
    ReadOnlyInline,
    TenantScopedAdmin,
    admin_actor,
    admin_scope,
    json_display,
    redirect_to_change,
    validation_message,
)
from apps.common.admin_buttons import ObjectButton, ObjectButtonsMixin

from . import admin_toolsets  # noqa: F401  (registers the toolsets' admin)
from .lint import has_errors, with_side_effect_confirmed
from .models import Tool, ToolVersion, VersionStatus
from .previews import definition_diff, export_previews
from .selectors import (
    lint_definition,
    version_content,
    version_findings,
    version_previous,
    with_open_drift,
)
from .services import (
    tool_delete,
    tool_save,
    version_create_draft_from,
    version_delete_draft,
    version_deprecate,
    version_publish,
    version_retire,
    version_save_draft,
)

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec
    from django_stubs_ext import WithAnnotations

IMPORTED_FROM = "Imported from"
JSON_FIELDS = ("parameters", "executor_config", "normalizers", "context_bindings", "rules", "approval",
               "output_schema", "annotations")
VERSION_FIELDSETS: _FieldsetSpec = (
    (None, {"fields": ("tool", "number", "status", "published_at", "changelog")}),
    ("What the model reads", {"fields": ("description", "parameters", "strict", "empty_meaning",
                                          "output_schema", "annotations")}),
    ("Execution", {"fields": ("side_effect", "executor", "executor_config", "mode", "timeout_s",
                              "max_chars", "approval")}),
    ("Checks before execution", {"fields": ("normalizers", "context_bindings", "rules", "loop_limit")}),
    (IMPORTED_FROM, {"fields": ("source_json",), "classes": ("collapse",)}),
)
# Set by the services (or an importer), never typed in.
VERSION_MANAGED_FIELDS = ("number", "status", "published_at", "source_json")


class ToolVersionInline(ReadOnlyInline):
    model = ToolVersion
    fields = ("number", "status", "side_effect", "published_at", "updated_at")
    readonly_fields = fields
    show_change_link = True
    verbose_name_plural = "versions (open one to publish it or start a new draft from it)"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("tool")


class _VersionCounts(TypedDict):
    latest_published_number: int | None
    version_total: int
    open_drift: int


@admin.register(Tool)
class ToolAdmin(TenantScopedAdmin):
    include_shared = True
    list_display = ("name", "owner", "summary", "latest_published", "version_count", "drift", "replaced_by")
    list_select_related = ("tenant", "replaced_by")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("name", "summary")
    ordering = ("name",)
    fields = ("name", "tenant", "summary", "replaced_by", "drift", "created_at", "updated_at")
    readonly_fields = ("drift", "created_at", "updated_at")
    inlines = (ToolVersionInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return with_open_drift(super().get_queryset(request)).annotate(
            latest_published_number=Max(
                "versions__number", filter=Q(versions__status=VersionStatus.PUBLISHED)
            ),
            version_total=Count("versions"),
        )

    @admin.display(description="owner", ordering="tenant__slug")
    def owner(self, obj: Tool) -> str:
        return obj.tenant.slug if obj.tenant is not None else "shared"

    @admin.display(description="latest published", ordering="latest_published_number")
    def latest_published(self, obj: WithAnnotations[Tool, _VersionCounts]) -> str:
        number = obj.latest_published_number
        return f"v{number}" if number else "none"

    @admin.display(description="versions", ordering="version_total")
    def version_count(self, obj: WithAnnotations[Tool, _VersionCounts]) -> int:
        return obj.version_total

    @admin.display(description="drift", ordering="open_drift")
    def drift(self, obj: WithAnnotations[Tool, _VersionCounts]) -> Any:
        """A badge linking to the tool's open drift findings: its MCP server changed it since
        it was published."""
        count = getattr(obj, "open_drift", 0)  # a tool being added is not annotated
        if not count:
            return "—"
        url = f"{reverse('admin:catalog_driftfinding_changelist')}?review=open&tool={obj.pk}"
        return format_html('<a class="toolhub-badge toolhub-warning" href="{}">{} open drift finding{}</a>',
                           url, count, "s" if count > 1 else "")

    def save_model(self, request: HttpRequest, obj: Tool, form: Any, change: bool) -> None:
        tool_save(tool=obj, actor=admin_actor(request))

    def delete_model(self, request: HttpRequest, obj: Tool) -> None:
        tool_delete(tool=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        for tool in queryset:
            tool_delete(tool=tool, actor=admin_actor(request))


# button / action name → (service, past tense for messages)
_VERSION_STEPS: dict[str, tuple[Callable[..., ToolVersion], str]] = {
    "publish": (version_publish, "published"),
    "deprecate": (version_deprecate, "deprecated"),
    "retire": (version_retire, "retired"),
}
_NEXT_STEPS: dict[str, tuple[str, ...]] = {
    VersionStatus.DRAFT: ("publish",),
    VersionStatus.PUBLISHED: ("deprecate", "retire"),
    VersionStatus.DEPRECATED: ("retire",),
    VersionStatus.RETIRED: (),
}


@admin.register(ToolVersion)
class ToolVersionAdmin(ObjectButtonsMixin, TenantScopedAdmin):
    """The version page: definition (editable while a draft), lint findings, the exports the
    model reads with their token cost, the diff against the previous version, the life-cycle
    buttons and a link to the try-it console (apps/dashboards/try_it.py)."""

    change_form_template = "admin/catalog/toolversion/change_form.html"
    tenant_path = "tool__tenant"
    include_shared = True
    list_display = ("tool", "number", "status", "side_effect", "executor", "mode", "published_at",
                    "updated_at")
    list_display_links = ("tool", "number")
    list_select_related = ("tool",)
    list_filter = ("status", "side_effect", "executor", ("tool__tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("tool__name", "description", "changelog")
    ordering = ("tool__name", "-number")
    actions = ("publish", "deprecate", "retire", "new_draft_from")

    parameters_json = json_display("parameters")
    executor_config_json = json_display("executor_config", "executor config")
    normalizers_json = json_display("normalizers")
    context_bindings_json = json_display("context_bindings", "context bindings")
    rules_json = json_display("rules")
    approval_json = json_display("approval")
    output_schema_json = json_display("output_schema", "output schema")
    annotations_json = json_display("annotations")
    source_json = json_display("source", "source (what an importer made it from)")

    def _editable(self, request: HttpRequest, obj: ToolVersion | None) -> bool:
        return obj is None or self.has_change_permission(request, obj)

    def _may_act(self, request: HttpRequest, version: ToolVersion) -> bool:
        """Status changes and new drafts: the model's change permission, not on shared tools
        for scoped staff (whatever the version's status)."""
        return not self.is_shared_for(request, version) and super().has_change_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (obj is None or obj.is_editable) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None and obj.is_editable and super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # only drafts may go, one at a time from their page
        return actions

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> _FieldsetSpec:
        # Only an importer's version says what it was made from.
        fieldsets = [(title, options) for title, options in VERSION_FIELDSETS
                     if title != IMPORTED_FROM or (obj is not None and obj.source)]
        if self._editable(request, obj):
            return fieldsets
        # Read-only: show the JSON parts indented instead of on one line.
        return [
            (title, {"fields": tuple(f"{f}_json" if f in JSON_FIELDS else f for f in options["fields"])})
            for title, options in fieldsets
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if not self._editable(request, obj):
            return tuple(flatten_fieldsets(self.get_fieldsets(request, obj)))
        return VERSION_MANAGED_FIELDS + (("tool",) if obj is not None else ())

    def get_field_queryset(self, db: str | None, db_field: Any, request: HttpRequest) -> QuerySet:
        queryset = super().get_field_queryset(db, db_field, request)
        scope = admin_scope(request)
        if db_field.name == "tool" and scope.is_tenant:
            # Drafts only for the tenant's own tools; shared tools are curated centrally.
            queryset = queryset.filter(tenant_id=scope.tenant_id)
        return queryset

    def save_model(self, request: HttpRequest, obj: ToolVersion, form: Any, change: bool) -> None:
        # Saving an imported draft on this page, which shows its side effect, is the curator's
        # confirmation of it (lint's side-effect-unconfirmed).
        obj.source = with_side_effect_confirmed(obj.source, obj.side_effect)
        version_save_draft(version=obj, actor=admin_actor(request))

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        version = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if version is not None:
            context.update(self._page_context(version))
        return super().change_view(request, object_id, form_url, context)

    def _page_context(self, version: ToolVersion) -> dict[str, Any]:
        findings = version_findings(version=version)
        previous = version_previous(version=version)
        return {
            "lint_findings": findings,
            "lint_has_errors": has_errors(findings),
            "lint_counts": {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")},
            "export_previews": export_previews(lint_definition(version)),
            "previous_version": previous,
            "version_diff": definition_diff(
                version_content(previous), version_content(version),
                before_name=f"v{previous.number}", after_name=f"v{version.number}",
            ) if previous else None,
        }

    def delete_model(self, request: HttpRequest, obj: ToolVersion) -> None:
        version_delete_draft(version=obj, actor=admin_actor(request))

    def object_buttons(self, request: HttpRequest, obj: ToolVersion) -> list[ObjectButton]:
        if not self._may_act(request, obj):
            return []
        # A draft's page may hold edits: its steps act only on what the page shows as saved.
        steps = [
            ObjectButton(step, step.capitalize(), text_field="note", text_placeholder="note (audit log)",
                         confirm=f"{step.capitalize()} {obj}? This cannot be undone.",
                         only_as_shown=obj.is_editable)
            for step in _NEXT_STEPS[obj.status]
        ]
        return [*steps, ObjectButton("new-draft", "New draft from this version")]

    def run_object_button(self, request: HttpRequest, obj: ToolVersion, name: str) -> HttpResponse:
        actor = admin_actor(request)
        try:
            if name == "new-draft":
                draft = version_create_draft_from(version=obj, actor=actor)
                messages.success(request, f"Created draft v{draft.number} from v{obj.number}; edit it below.")
                return redirect_to_change(self, draft)
            service, done = _VERSION_STEPS[name]
            service(version=obj, actor=actor, note=request.POST.get("note", "").strip())
            messages.success(request, f"{done.capitalize()} {obj.tool.name} v{obj.number}.")
        except ValidationError as error:
            messages.error(request, validation_message(error))
        return redirect_to_change(self, obj)

    def _for_each(
        self, request: HttpRequest, queryset: QuerySet[ToolVersion], run: Callable[[ToolVersion], ToolVersion]
    ) -> list[ToolVersion]:
        """Run one service per selected version; refusals become error messages, not crashes."""
        results = []
        for version in queryset.select_related("tool"):
            if not self._may_act(request, version):
                messages.error(request, f"Skipped {version}: shared tools are read-only for your tenant.")
                continue
            try:
                results.append(run(version))
            except ValidationError as error:
                messages.error(request, validation_message(error))
        return results

    def _step(self, request: HttpRequest, queryset: QuerySet[ToolVersion], step: str) -> None:
        service, done = _VERSION_STEPS[step]
        changed = self._for_each(request, queryset, lambda v: service(version=v, actor=admin_actor(request)))
        if changed:
            listed = ", ".join(f"{v.tool.name} v{v.number}" for v in changed)
            messages.success(request, f"{done.capitalize()}: {listed}.")

    @admin.action(description="Publish the selected drafts", permissions=["change"])
    def publish(self, request: HttpRequest, queryset: QuerySet[ToolVersion]) -> None:
        self._step(request, queryset, "publish")

    @admin.action(description="Deprecate the selected published versions", permissions=["change"])
    def deprecate(self, request: HttpRequest, queryset: QuerySet[ToolVersion]) -> None:
        self._step(request, queryset, "deprecate")

    @admin.action(description="Retire the selected versions", permissions=["change"])
    def retire(self, request: HttpRequest, queryset: QuerySet[ToolVersion]) -> None:
        self._step(request, queryset, "retire")

    @admin.action(description="New draft from each selected version", permissions=["change"])
    def new_draft_from(self, request: HttpRequest, queryset: QuerySet[ToolVersion]) -> HttpResponse | None:
        drafts = self._for_each(
            request, queryset, lambda v: version_create_draft_from(version=v, actor=admin_actor(request))
        )
        if len(drafts) == 1:
            messages.success(request, f"Created draft v{drafts[0].number}; edit it below.")
            return redirect_to_change(self, drafts[0])
        if drafts:
            listed = ", ".join(f"{d.tool.name} v{d.number}" for d in drafts)
            messages.success(request, f"Created drafts: {listed}.")
        return None
