"""People in the admin: who may manage whom.

- Superusers: Django's whole user admin.
- Tenant staff (a StaffScope) holding the user permissions: the people scoped to their
  tenant, nobody else (another tenant's person is "not found"). Superuser status and the
  tenant are not fields for them; they grant only the groups they belong to and the
  permissions they hold, and change only people who hold nothing they lack (a new password
  for a better-placed colleague would be a way up); those they may view. People they add
  are scoped to their tenant. People leave by deactivation: the audit log names them.
- Staff without a scope who are not superusers: no user admin.

Groups carry permissions for every tenant, so only unscoped staff see the group admin.
"""

from __future__ import annotations

from typing import Any

import django.contrib.auth.admin  # noqa: F401  (registers the stock admins replaced below)
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.contrib.auth.models import Group, User
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from apps.common.admin import (
    UnscopedOnlyAdminMixin,
    admin_actor,
    admin_scope,
    admin_user,
    model_choice_field,
    restrict_to_scope,
)

from .models import StaffScope
from .selectors import permissions_held
from .services import staff_user_scope

TENANT_STAFF_FIELDSETS = (
    (None, {"fields": ("username", "password")}),
    ("Personal info", {"fields": ("first_name", "last_name", "email")}),
    ("Permissions", {
        "fields": ("tenant", "is_active", "is_staff", "groups", "user_permissions"),
        "description": "Only the groups you belong to and the permissions you hold are offered; "
                       "what this person holds beyond them stays as it is.",
    }),
    ("Important dates", {"fields": ("last_login", "date_joined")}),
)


class TenantStaffChangeForm(UserChangeForm):
    """The choices of groups and permissions are what the editor may grant (the admin sets
    them); what the person already holds beyond those is kept, not dropped."""

    def _chosen_and_kept(self, name: str) -> QuerySet:
        chosen = self.cleaned_data[name]
        offered = model_choice_field(self, name).queryset
        if offered is None:
            raise ValueError(f"The form offers no {name} to choose from.")
        kept = getattr(self.instance, name).exclude(pk__in=offered.values("pk"))
        return offered.model.objects.filter(Q(pk__in=chosen.values("pk")) | Q(pk__in=kept.values("pk")))

    def clean_groups(self) -> QuerySet:
        return self._chosen_and_kept("groups")

    def clean_user_permissions(self) -> QuerySet:
        return self._chosen_and_kept("user_permissions")


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class PeopleAdmin(UserAdmin):
    list_display = ("username", "email", "first_name", "last_name", "is_staff", "tenant")
    list_select_related = ("staff_scope__tenant",)

    @admin.display(description="tenant", ordering="staff_scope__tenant__slug")
    def tenant(self, obj: User) -> str:
        try:
            return obj.staff_scope.tenant.slug
        except StaffScope.DoesNotExist:
            return "every tenant" if obj.is_superuser else "none"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        scope = admin_scope(request)
        people = restrict_to_scope(super().get_queryset(request), scope, tenant_path="staff_scope__tenant")
        return people if scope.unrestricted else people.filter(is_superuser=False)

    def _manages_people(self, request: HttpRequest) -> bool:
        return not admin_scope(request).sees_nothing

    def _within_reach(self, request: HttpRequest, person: User | None) -> bool:
        """Tenant staff change only people who hold no permission they lack themselves."""
        if person is None or not admin_scope(request).is_tenant:
            return True
        own = permissions_held(user=admin_user(request)).values("pk")
        return not permissions_held(user=person).exclude(pk__in=own).exists()

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._manages_people(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._manages_people(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._manages_people(request) and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (self._manages_people(request) and self._within_reach(request, obj)
                and super().has_change_permission(request, obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin_scope(request).unrestricted and super().has_delete_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and admin_scope(request).is_tenant:
            return TENANT_STAFF_FIELDSETS
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if admin_scope(request).is_tenant:
            return ("tenant", "last_login", "date_joined")
        return super().get_readonly_fields(request, obj)

    def get_list_filter(self, request: HttpRequest) -> Any:
        if admin_scope(request).is_tenant:
            return ("is_staff", "is_active")  # other tenants' group names stay out of the filter
        return super().get_list_filter(request)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is not None and admin_scope(request).is_tenant:
            kwargs["form"] = TenantStaffChangeForm
        return super().get_form(request, obj, change=change, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if admin_scope(request).is_tenant:
            if db_field.name == "groups":
                kwargs["queryset"] = admin_user(request).groups.all()
            elif db_field.name == "user_permissions":
                kwargs["queryset"] = permissions_held(user=admin_user(request))
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: User, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        scope = admin_scope(request)
        tenant_id = scope.tenant_id if scope.is_tenant else None
        if not change and tenant_id is not None:
            staff_user_scope(user=obj, tenant_id=tenant_id, actor=admin_actor(request))


@admin.register(Group)
class ToolHubGroupAdmin(UnscopedOnlyAdminMixin, GroupAdmin):
    """Groups hold permissions across tenants: not for tenant staff."""
