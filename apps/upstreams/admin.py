"""Admin of upstreams and credentials, scoped to the user's tenant (platform rows are
read-only to tenant staff; platform credentials are not shown to them at all).

A credential's value is write-only: the form has an empty password input, leaving it empty
keeps the stored value, and pages show only the kind, who changed it and when, and the last
four characters. Every write goes through apps/upstreams/services.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.common.admin import ReadOnlyInline, SuperuserOnlyMixin, TenantScopedAdmin, ToolHubAdmin, admin_actor
from apps.common.egress import egress_policy

from .models import Credential, McpLauncher, SubjectCredential, Upstream, value_problem
from .services import (
    credential_delete,
    credential_set,
    launcher_delete,
    launcher_save,
    upstream_delete,
    upstream_save,
)

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups


def _owner(obj: Upstream | Credential) -> str:
    return obj.tenant.slug if obj.tenant is not None else "platform"


class LinesField(forms.CharField):
    """A list of strings edited one per line (a path, an argument or a name may hold spaces,
    so no other separator is safe); blank lines are dropped."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80, "spellcheck": "false"})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs.pop("max_length", None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class LinesFieldsMixin:
    """Edits the JSON lists named in `lines_fields` one item per line (the first required)."""

    lines_fields: tuple[str, ...] = ()
    required_lines_fields: tuple[str, ...] = ()

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name in self.lines_fields:
            kwargs.update(
                form_class=LinesField, help_text=f"One per line. {db_field.help_text}",
                required=db_field.name in self.required_lines_fields,
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)  # type: ignore[misc]


@admin.register(McpLauncher)
class McpLauncherAdmin(SuperuserOnlyMixin, LinesFieldsMixin, ToolHubAdmin):
    """Launchers are the platform's: running a command is running code on ToolHub's machines,
    so only superusers see and change them (the paths and limits are the machines' business).
    Tenant staff choose one by name in an upstream's form."""

    list_display = ("name", "executable", "allow_args", "network", "memory_mb", "cpu_s", "upstream_count")
    search_fields = ("name", "description")
    ordering = ("name",)
    fieldsets = (
        (None, {"fields": ("name", "description", "command", "allow_args", "env_names")}),
        ("Confinement", {"fields": ("read_paths", "write_paths", "network", "memory_mb", "cpu_s",
                                    "max_processes", "max_open_files", "idle_stop_s")}),
        ("History", {"fields": ("created_at", "updated_at")}),
    )
    readonly_fields = ("created_at", "updated_at")
    lines_fields = ("command", "read_paths", "write_paths", "env_names")
    required_lines_fields = ("command",)

    @admin.display(description="executable")
    def executable(self, obj: McpLauncher) -> str:
        return obj.command[0] if obj.command else "-"

    @admin.display(description="upstreams")
    def upstream_count(self, obj: McpLauncher) -> int:
        return obj.upstreams.count()

    def save_model(self, request: HttpRequest, obj: McpLauncher, form: Any, change: bool) -> None:
        launcher_save(launcher=obj, actor=admin_actor(request))

    def delete_model(self, request: HttpRequest, obj: McpLauncher) -> None:
        launcher_delete(launcher=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[McpLauncher]) -> None:
        for launcher in queryset:
            launcher_delete(launcher=launcher, actor=admin_actor(request))


@admin.register(Upstream)
class UpstreamAdmin(LinesFieldsMixin, TenantScopedAdmin):
    include_shared = True
    # An upstream takes a credential of its own owner: tenant staff are offered only theirs.
    related_tenant_paths = {
        **TenantScopedAdmin.related_tenant_paths, "upstreams.Credential": ("tenant", False),
    }
    formfield_overrides = {
        **TenantScopedAdmin.formfield_overrides, models.URLField: {"assume_scheme": "https"},
    }
    lines_fields = ("launcher_args",)
    list_display = ("name", "owner", "kind", "where", "credential", "egress")
    list_select_related = ("tenant", "credential", "launcher")
    list_filter = ("kind", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("name", "base_url")
    ordering = ("name",)
    fieldsets = (
        (None, {"fields": ("name", "tenant", "kind", "base_url", "timeout_s", "credential", "egress")}),
        ("MCP server", {"fields": ("launcher", "launcher_args", "status_tool", "sync_interval_minutes",
                                   "suspend_drifted_tools", "last_synced_at")}),
        ("History", {"fields": ("created_at", "updated_at")}),
    )
    readonly_fields = ("egress", "last_synced_at", "created_at", "updated_at")

    @admin.display(description="owner", ordering="tenant__slug")
    def owner(self, obj: Upstream) -> str:
        return _owner(obj)

    @admin.display(description="where", ordering="base_url")
    def where(self, obj: Upstream) -> str:
        return obj.where

    @admin.display(description="egress policy")
    def egress(self, obj: Upstream) -> str:
        """The policy's verdict on the URL as written; the executor checks each resolved
        address again when it connects. A launcher's process has the network only when the
        launcher says so."""
        if obj.launcher is not None:
            return "launcher: with the network" if obj.launcher.network else "launcher: no network"
        if not obj.base_url:
            return "-"
        refusal = egress_policy().url_refusal(obj.base_url)
        return f"refused: {refusal}" if refusal else "allowed"

    def save_model(self, request: HttpRequest, obj: Upstream, form: Any, change: bool) -> None:
        upstream_save(upstream=obj, actor=admin_actor(request))

    def delete_model(self, request: HttpRequest, obj: Upstream) -> None:
        upstream_delete(upstream=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Upstream]) -> None:
        for upstream in queryset:
            upstream_delete(upstream=upstream, actor=admin_actor(request))


class CredentialForm(forms.ModelForm):
    value = forms.CharField(
        required=False, strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: never shown again. Leave empty to keep the stored value. Basic auth "
        "takes user:password. Empty for a per-end-user credential.",
    )

    class Meta:
        model = Credential
        fields = ("name", "tenant", "kind", "field", "per_subject")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        value = cleaned.get("value", "")
        per_subject = cleaned.get("per_subject", self.instance.per_subject)
        if per_subject and value:
            self.add_error("value", "A per-end-user credential has no value of its own; leave it empty.")
        elif value and (problem := value_problem(value, kind=cleaned.get("kind", ""))):
            self.add_error("value", problem)
        elif not per_subject and not value and not self.instance.ciphertext:
            self.add_error("value", "Enter the value: this credential has none stored yet.")
        return cleaned


class SubjectCredentialInline(ReadOnlyInline):
    model = SubjectCredential
    fields = ("subject", "agent", "last4", "changed_at")
    readonly_fields = fields
    verbose_name_plural = (
        "end users' own values (registered by the tenant's agents in their users' sessions; each "
        "agent sends only the values it registered)"
    )


@admin.register(Credential)
class CredentialAdmin(TenantScopedAdmin):
    form = CredentialForm
    list_display = ("name", "owner", "kind", "field", "per_subject", "stored", "changed_by", "changed_at")
    list_select_related = ("tenant",)
    list_filter = ("kind", "per_subject", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("name",)
    ordering = ("name",)
    readonly_fields = ("stored", "changed_by", "changed_at")
    inlines = (SubjectCredentialInline,)

    def get_fields(self, request: HttpRequest, obj: Credential | None = None) -> _FieldGroups:
        return ["name", "tenant", "kind", "field", "per_subject", "value", *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Credential | None = None) -> tuple[str, ...]:
        # The service finds a credential by owner and name: they are what it is.
        return ("name", "tenant", *self.readonly_fields) if obj else self.readonly_fields

    @admin.display(description="owner", ordering="tenant__slug")
    def owner(self, obj: Credential) -> str:
        return _owner(obj)

    @admin.display(description="stored value")
    def stored(self, obj: Credential) -> str:
        if obj.per_subject:
            return "none: each end user's own"
        if not obj.ciphertext:
            return "-"
        return f"…{obj.last4}" if obj.last4 else "set (too short to show its end)"

    def save_model(self, request: HttpRequest, obj: Credential, form: Any, change: bool) -> None:
        saved = credential_set(
            tenant=obj.tenant, name=obj.name, kind=obj.kind, field=obj.field,
            value=form.cleaned_data.get("value") or None, per_subject=obj.per_subject,
            actor=admin_actor(request),
        )
        obj.pk, obj._state.adding = saved.pk, False

    def delete_model(self, request: HttpRequest, obj: Credential) -> None:
        credential_delete(credential=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Credential]) -> None:
        for credential in queryset:
            credential_delete(credential=credential, actor=admin_actor(request))
