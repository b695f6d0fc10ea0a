"""Capability requests in the admin: what agents needed and could not do, most requested first.

Operators answer with status actions: planned, fulfilled by a tool, declined with a reason
(agents calling request_capability are told), or reopen. Rows are written by agents only;
here they are read-only except through those actions.

Tenant scoping comes from TenantScopedAdmin: staff scoped to a tenant see its rows only.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from apps.catalog.models import Tool
from apps.common.admin import (
    AdminScope,
    TenantScopedAdmin,
    admin_scope,
    model_choice_field,
    restrict_to_scope,
)

from .models import CapabilityRequest, CapabilityStatus
from .selectors import tools_opened_for
from .services import capability_request_set_status


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.get_username()}"


class _OwnedToolField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Tool) -> str:
        """Two tenants may each have a tool of one name: say whose."""
        return f"{obj.name} ({obj.tenant.slug if obj.tenant is not None else 'shared'})"


class FulfilForm(forms.Form):
    fulfilled_by = _OwnedToolField(
        queryset=Tool.objects.none(), help_text="The tool that now provides this capability."
    )

    def __init__(self, *args: Any, scope: AdminScope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice_field(self, "fulfilled_by").queryset = restrict_to_scope(
            Tool.objects.select_related("tenant").order_by("name"), scope, tenant_path="tenant",
            include_shared=True,
        )


OPENINGS_SHOWN = 20


class DeclineForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=1000,
        help_text="Agents that ask again are told this reason; write it for them and the user.",
    )


@admin.register(CapabilityRequest)
class CapabilityRequestAdmin(TenantScopedAdmin):
    list_display = ("name", "reason", "count", "answer", "first_seen", "last_seen", "tenant")
    list_filter = ("reason", "status")
    search_fields = ("name",)
    ordering = ("-count", "-last_seen")
    fields = (
        "tenant",
        "name",
        "reason",
        "count",
        "first_seen",
        "last_seen",
        "status",
        "fulfilled_by",
        "decline_reason",
        "tools_opened",
        "recent_samples",
    )
    readonly_fields = fields
    actions = ("mark_planned", "mark_fulfilled", "mark_declined", "reopen")

    list_select_related = ("tenant", "fulfilled_by")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: CapabilityRequest | None = None) -> bool:
        return False

    @admin.display(description="status", ordering="status")
    def answer(self, obj: CapabilityRequest) -> str:
        if obj.status == CapabilityStatus.FULFILLED and obj.fulfilled_by is not None:
            return f"fulfilled by {obj.fulfilled_by.name}"
        if obj.status == CapabilityStatus.DECLINED:
            return f"declined: {obj.decline_reason}"
        return obj.status

    @admin.display(description="tools opened to tasks")
    def tools_opened(self, obj: CapabilityRequest) -> str:
        """What request_capability opened for this need: each granted tool, to which task,
        from where (the newest first, at most OPENINGS_SHOWN)."""
        openings = tools_opened_for(tenant_id=obj.tenant_id, capability=obj.name)[:OPENINGS_SHOWN]
        if not openings:
            return "none: no granted tool matched, or none could be opened"
        return format_html_join(
            mark_safe("<br>"),
            "{} to task {} (agent {}, asked in {}) on {}",
            (
                (o.tool.name, o.task_id, o.agent.name, f"{o.toolset}/{o.phase}".strip("/") or "no toolset",
                 o.created_at.strftime("%Y-%m-%d %H:%M"))
                for o in openings
            ),
        )

    @admin.display(description="samples (newest first)")
    def recent_samples(self, obj: CapabilityRequest) -> str:
        return format_html(
            "<pre style='white-space: pre-wrap'>{}</pre>",
            json.dumps(obj.samples, indent=2, ensure_ascii=False, default=str),
        )

    def _apply(
        self, request: HttpRequest, queryset: QuerySet[CapabilityRequest], status: str, **answer: Any
    ) -> None:
        changed = 0
        for row in queryset:
            try:
                capability_request_set_status(request=row, status=status, actor=_actor(request), **answer)
            except ValidationError as error:
                self.message_user(request, f"{row.name}: {' '.join(error.messages)}", messages.ERROR)
            else:
                changed += 1
        if changed:
            self.message_user(request, f"{changed} capability request(s) marked {status}.", messages.SUCCESS)

    def _form_step(
        self,
        request: HttpRequest,
        queryset: QuerySet[CapabilityRequest],
        form: forms.Form,
        title: str,
        action: str,
    ) -> HttpResponse | None:
        """None once the form is valid (the caller applies it); else the page that asks for it."""
        if "apply" in request.POST and form.is_valid():
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "form": form,
            "rows": queryset,
            "action": action,
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/capabilities/capabilityrequest/answer.html", context)

    @admin.action(description="Mark planned")
    def mark_planned(self, request: HttpRequest, queryset: QuerySet[CapabilityRequest]) -> None:
        self._apply(request, queryset, CapabilityStatus.PLANNED)

    @admin.action(description="Mark fulfilled by a tool…")
    def mark_fulfilled(
        self, request: HttpRequest, queryset: QuerySet[CapabilityRequest]
    ) -> HttpResponse | None:
        form = FulfilForm(
            request.POST if "apply" in request.POST else None, scope=admin_scope(request)
        )
        page = self._form_step(request, queryset, form, "Fulfilled by which tool?", "mark_fulfilled")
        if page is None:
            self._apply(
                request, queryset, CapabilityStatus.FULFILLED, fulfilled_by=form.cleaned_data["fulfilled_by"]
            )
        return page

    @admin.action(description="Decline with a reason…")
    def mark_declined(
        self, request: HttpRequest, queryset: QuerySet[CapabilityRequest]
    ) -> HttpResponse | None:
        form = DeclineForm(request.POST if "apply" in request.POST else None)
        page = self._form_step(request, queryset, form, "Why is it declined?", "mark_declined")
        if page is None:
            self._apply(request, queryset, CapabilityStatus.DECLINED, reason=form.cleaned_data["reason"])
        return page

    @admin.action(description="Reopen")
    def reopen(self, request: HttpRequest, queryset: QuerySet[CapabilityRequest]) -> None:
        self._apply(request, queryset, CapabilityStatus.OPEN)
