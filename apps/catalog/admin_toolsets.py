"""Admin of the toolsets and their phases, edited by unscoped staff only. A toolset holds only
the tools its owner's agents may call (the forms refuse the others); every save and delete
is recorded through apps/catalog/services.py (toolset_changed), so it is audited and seen by
the gateway at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.common.admin import ToolHubAdmin, UnscopedOnlyAdminMixin, admin_actor

from .models import Toolset, ToolsetPhase
from .services import toolset_changed

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class ToolsetForm(forms.ModelForm):
    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        toolset = Toolset(tenant=cleaned.get("tenant"))
        try:
            toolset.refuse_foreign_tools(cleaned.get("tools") or ())
        except ValidationError as error:
            self.add_error("tools", error)
        return cleaned


class ToolsetPhaseForm(forms.ModelForm):
    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        # The inline's parent, as the toolset form above it was just filled in.
        toolset = cleaned.get("toolset")
        try:
            if toolset is not None:
                toolset.refuse_foreign_tools(cleaned.get("tools") or ())
        except ValidationError as error:
            self.add_error("tools", error)
        return cleaned


class ToolsetPhaseInline(admin.TabularInline):
    model = ToolsetPhase
    form = ToolsetPhaseForm
    fields = ("name", "tools", "gates")
    extra = 0

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("toolset").prefetch_related("tools")


class _MemberCounts(TypedDict):
    tool_total: int
    phase_total: int


@admin.register(Toolset)
class ToolsetAdmin(UnscopedOnlyAdminMixin, ToolHubAdmin):
    """Toolsets are edited by unscoped staff only (a tenant's or shared; each holds only the
    tools its owner's agents may call)."""

    form = ToolsetForm
    list_display = ("name", "owner", "description", "tool_count", "phase_count")
    list_select_related = ("tenant",)
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("name", "description")
    ordering = ("name",)
    filter_horizontal = ("tools",)
    inlines = (ToolsetPhaseInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(
            tool_total=Count("tools", distinct=True), phase_total=Count("phases", distinct=True)
        )

    @admin.display(description="owner", ordering="tenant__slug")
    def owner(self, obj: Toolset) -> str:
        return obj.tenant.slug if obj.tenant is not None else "shared"

    @admin.display(description="tools", ordering="tool_total")
    def tool_count(self, obj: WithAnnotations[Toolset, _MemberCounts]) -> int:
        return obj.tool_total

    @admin.display(description="phases", ordering="phase_total")
    def phase_count(self, obj: WithAnnotations[Toolset, _MemberCounts]) -> int:
        return obj.phase_total

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        action = "update" if change else "create"
        toolset_changed(toolset=form.instance, actor=admin_actor(request), action=action)

    def delete_model(self, request: HttpRequest, obj: Toolset) -> None:
        toolset_changed(toolset=obj, actor=admin_actor(request), action="delete")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Toolset]) -> None:
        for toolset in queryset:
            self.delete_model(request, toolset)
