"""Admin of tenants, agents and their keys, grants, tenant policies and staff scopes.

Every write goes through a service so it is audited and, for grants and policies, seen by
the gateway at once (the catalog generation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from apps.common.admin import (
    ReadOnlyInline,
    SuperuserOnlyMixin,
    TenantScopedAdmin,
    admin_actor,
    admin_scope,
    redirect_to_change,
)
from apps.common.admin_buttons import ObjectButton, ObjectButtonsMixin

from . import people_admin  # noqa: F401  (the user and group admins: who may manage whom)
from .models import Agent, AgentKey, Grant, StaffScope, Tenant, TenantPolicy
from .services import (
    IssuedKey,
    agent_key_issue,
    agent_key_revoke,
    agent_save,
    grant_delete,
    grant_save,
    tenant_policy_delete,
    tenant_policy_save,
    tenant_save,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

ONCE = "Copy it now: it is shown only this once and cannot be recovered."


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    tenant_path = "pk"
    list_display = ("slug", "name", "active", "created_at")
    list_filter = ("active",)
    search_fields = ("slug", "name")
    ordering = ("slug",)
    readonly_fields = ("created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return admin_scope(request).unrestricted and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin_scope(request).unrestricted and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tenants own ledgers and audit trails: deactivate instead

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        tenant_save(tenant=obj, actor=admin_actor(request))


class AgentKeyInline(ReadOnlyInline):
    model = AgentKey
    fields = ("prefix", "label", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    show_change_link = True
    verbose_name_plural = "keys (issue one with the button above; open a key to revoke it)"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("agent__tenant")


class _KeyCount(TypedDict):
    active_key_count: int


@admin.register(Agent)
class AgentAdmin(ObjectButtonsMixin, TenantScopedAdmin):
    list_display = ("name", "tenant", "active", "active_keys", "created_at")
    list_select_related = ("tenant",)
    list_filter = ("active", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("name", "description", "tenant__slug")
    ordering = ("tenant__slug", "name")
    fields = ("tenant", "name", "description", "active", "created_at", "updated_at")
    readonly_fields = ("created_at", "updated_at")
    inlines = (AgentKeyInline,)
    actions = ("issue_key",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(
            active_key_count=Count("keys", filter=Q(keys__revoked_at__isnull=True))
        )

    @admin.display(description="active keys", ordering="active_key_count")
    def active_keys(self, obj: WithAnnotations[Agent, _KeyCount]) -> int:
        return obj.active_key_count

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the invocation log and ledger point at agents: deactivate instead

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        agent_save(agent=obj, actor=admin_actor(request))

    def object_buttons(self, request: HttpRequest, obj: Agent) -> list[ObjectButton]:
        if not self.has_change_permission(request, obj):
            return []
        return [
            ObjectButton("issue-key", "Issue key", text_field="label", text_placeholder="label (optional)")
        ]

    def run_object_button(self, request: HttpRequest, obj: Agent, name: str) -> HttpResponse:
        return self._issue_keys(request, [obj], label=request.POST.get("label", "").strip()[:100])

    @admin.action(description="Issue a new key for each selected agent", permissions=["change"])
    def issue_key(self, request: HttpRequest, queryset: QuerySet[Agent]) -> HttpResponse:
        return self._issue_keys(request, list(queryset.select_related("tenant")), label="")

    def _issue_keys(self, request: HttpRequest, agents: list[Agent], *, label: str) -> HttpResponse:
        """Issue one key per agent and answer with the page that shows them.

        The secret is in this response only: a message would carry it in the messages
        cookie (signed, not encrypted, logged by proxies) or the session.
        """
        issued: list[tuple[Agent, IssuedKey]] = [
            (agent, agent_key_issue(agent=agent, label=label, actor=admin_actor(request))) for agent in agents
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "New agent key" if len(issued) == 1 else f"{len(issued)} new agent keys",
            "opts": self.opts, "issued_keys": issued, "once": ONCE,
        }
        return TemplateResponse(request, "admin/tenancy/agent/issued_keys.html", context)


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "active"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(AgentKey)
class AgentKeyAdmin(ObjectButtonsMixin, TenantScopedAdmin):
    """Keys are issued from their agent and never edited; the only change is revocation."""

    list_display = ("prefix", "agent", "label", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("agent__tenant",)
    list_filter = (KeyStateFilter, ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("prefix", "label", "agent__name")
    ordering = ("-created_at",)
    fields = ("prefix", "tenant", "agent", "label", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The page of one key is view-only; "change" is what the revoke action requires.
        return obj is None and super().has_change_permission(request)

    def object_buttons(self, request: HttpRequest, obj: AgentKey) -> list[ObjectButton]:
        if obj.revoked_at is not None or not super().has_change_permission(request):
            return []
        return [
            ObjectButton("revoke", "Revoke key", text_field="note", text_placeholder="why (audit log)",
                         confirm="Requests with this key are refused from now on.")
        ]

    def run_object_button(self, request: HttpRequest, obj: AgentKey, name: str) -> HttpResponse:
        agent_key_revoke(key=obj, actor=admin_actor(request), note=request.POST.get("note", "").strip())
        messages.success(request, f"Key {obj.prefix} of {obj.agent} is revoked.")
        return redirect_to_change(self, obj)

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[AgentKey]) -> None:
        revoked = [agent_key_revoke(key=key, actor=admin_actor(request)).prefix
                   for key in queryset.filter(revoked_at__isnull=True)]
        listed = ", ".join(revoked) or "none was active"
        self.message_user(request, f"Revoked {len(revoked)} key(s): {listed}.")


@admin.register(Grant)
class GrantAdmin(TenantScopedAdmin):
    """Tenant staff grant their tenant's own tools; shared tools are granted by the platform
    (superusers) only: not offered to tenant staff, and their grants are view-only to them
    (a tenant may still remove one it does not want)."""

    list_select_related = ("tenant", "agent", "tool", "pinned_version__tool")
    ordering = ("tenant__slug", "tool__name")
    list_display = ("tenant", "agent_or_all", "tool", "pinned_version", "updated_at")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter), ("tool", admin.RelatedOnlyFieldListFilter))
    search_fields = ("tool__name", "agent__name", "tenant__slug")
    fields = ("tenant", "agent", "tool", "pinned_version", "granted_by", "granted_by_platform")
    readonly_fields = ("granted_by", "granted_by_platform")

    @admin.display(description="agent", ordering="agent__name")
    def agent_or_all(self, obj: Grant) -> str:
        return obj.agent.name if obj.agent is not None else "all agents"

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if admin_scope(request).is_tenant and db_field.name in ("tool", "pinned_version"):
            shared = "tenant__isnull" if db_field.name == "tool" else "tool__tenant__isnull"
            choices = self.get_field_queryset(kwargs.get("using"), db_field, request)
            kwargs["queryset"] = choices.exclude(**{shared: True})
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        shared_tool = obj is not None and obj.tool.tenant_id is None
        return (not (shared_tool and admin_scope(request).is_tenant)
                and super().has_change_permission(request, obj))

    def save_model(self, request: HttpRequest, obj: Grant, form: Any, change: bool) -> None:
        grant_save(grant=obj, actor=admin_actor(request), by_platform=admin_scope(request).unrestricted)

    def delete_model(self, request: HttpRequest, obj: Grant) -> None:
        grant_delete(grant=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Grant]) -> None:
        for grant in queryset.select_related("agent", "tool", "pinned_version"):
            grant_delete(grant=grant, actor=admin_actor(request))


@admin.register(TenantPolicy)
class TenantPolicyAdmin(TenantScopedAdmin):
    list_select_related = ("tenant", "tool")
    ordering = ("tenant__slug", "tool__name")
    list_display = ("tenant", "tool_or_all", "rate_limit_per_minute", "task_call_budget",
                    "daily_quota_per_subject", "requires_approval")
    list_filter = (("tenant", admin.RelatedOnlyFieldListFilter), "requires_approval")
    search_fields = ("tenant__slug", "tool__name")
    fields = ("tenant", "tool", "rate_limit_per_minute", "task_call_budget", "daily_quota_per_subject",
              "requires_approval", "rule_overrides", "open_on_request", "max_opened_per_task")

    @admin.display(description="tool", ordering="tool__name")
    def tool_or_all(self, obj: TenantPolicy) -> str:
        return obj.tool.name if obj.tool is not None else "all tools"

    def save_model(self, request: HttpRequest, obj: TenantPolicy, form: Any, change: bool) -> None:
        tenant_policy_save(policy=obj, actor=admin_actor(request))

    def delete_model(self, request: HttpRequest, obj: TenantPolicy) -> None:
        tenant_policy_delete(policy=obj, actor=admin_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[TenantPolicy]) -> None:
        for policy in queryset.select_related("tool"):
            tenant_policy_delete(policy=policy, actor=admin_actor(request))


@admin.register(StaffScope)
class StaffScopeAdmin(SuperuserOnlyMixin, admin.ModelAdmin):
    """Only superusers decide who is scoped where; a scoped user must not widen their own scope."""

    list_display = ("user", "tenant")
    list_select_related = ("user", "tenant")
    search_fields = ("user__username", "user__email", "tenant__slug")
    ordering = ("tenant__slug", "user__username")

