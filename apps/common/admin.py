"""Building blocks of every admin: tenant scoping of staff, read-only admins, readable JSON
(a change page's service buttons: admin_buttons.py).

Scoping (contract §6, style habit 6): each admin user has an AdminScope, decided by the
function settings.TOOLHUB_ADMIN_SCOPE names (apps/tenancy/admin_scoping.py: who sees which
tenant); the admins here restrict rows, choices and forms to it. Another tenant's object by
URL is simply "not found".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.exceptions import FieldDoesNotExist, PermissionDenied, ValidationError
from django.db import models
from django.db.models import Q, QuerySet
from django.db.models.fields.related import RelatedField
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString

if TYPE_CHECKING:
    from django.contrib.admin.options import _ListFilterT
    from django.utils.datastructures import _ListOrTuple

    # The mixins below are mixed into model admins: checked as one, plain classes at run time.
    _ModelAdminMixinBase = admin.ModelAdmin
else:
    _ModelAdminMixinBase = object


@dataclass(frozen=True)
class AdminScope:
    """Which tenants' rows one admin user may see."""

    unrestricted: bool
    tenant_id: int | None = None

    @property
    def is_tenant(self) -> bool:
        return not self.unrestricted and self.tenant_id is not None

    @property
    def sees_nothing(self) -> bool:
        return not self.unrestricted and self.tenant_id is None


@cache
def _scope_of_user() -> Callable[..., AdminScope]:
    return import_string(settings.TOOLHUB_ADMIN_SCOPE)


def admin_scope(request: HttpRequest) -> AdminScope:
    """The scope of the request's user, read once per request."""
    scope = getattr(request, "_toolhub_admin_scope", None)
    if scope is None:
        scope = _scope_of_user()(user=request.user)
        request._toolhub_admin_scope = scope  # type: ignore[attr-defined]  # a memo on this request
    return scope


def restrict_to_scope(
    queryset: QuerySet, scope: AdminScope, *, tenant_path: str, include_shared: bool = False
) -> QuerySet:
    """Rows of `queryset` the scope may see; `tenant_path` leads from a row to its tenant id.

    With `include_shared`, rows whose tenant is empty (the shared catalog) are visible too.
    """
    if scope.unrestricted:
        return queryset
    if scope.tenant_id is None:
        return queryset.none()
    visible = Q(**{tenant_path: scope.tenant_id})
    if include_shared:
        visible |= Q(**{f"{tenant_path}__isnull": True})
    return queryset.filter(visible)


def admin_user(request: HttpRequest) -> User:
    """The signed-in user of an admin page (the admin site lets nobody else in)."""
    user = request.user
    if not user.is_authenticated:
        raise PermissionDenied
    return user


def model_choice_field(form: forms.BaseForm, name: str) -> forms.ModelChoiceField:
    """A form's field that offers model rows, to narrow its choices."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"{type(form).__name__}.{name} does not offer model rows")
    return field


def admin_actor(request: HttpRequest) -> str:
    """How the audit log names an admin user."""
    return f"admin:{request.user.get_username()}"


def validation_message(error: ValidationError) -> str:
    return " ".join(error.messages)


def redirect_to_change(model_admin: admin.ModelAdmin, obj: models.Model) -> HttpResponseRedirect:
    opts = obj._meta
    return HttpResponseRedirect(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk],
                current_app=model_admin.admin_site.name)
    )


class PrettyJSONFormField(forms.JSONField):
    """A JSON textarea that shows its value indented, so curators can read and diff it."""

    widget = forms.Textarea(attrs={"rows": 14, "cols": 90, "style": "font-family: monospace"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)


def pretty_json(value: Any) -> SafeString:
    return format_html(
        '<pre style="margin: 0; white-space: pre-wrap">{}</pre>',
        json.dumps(value, indent=2, ensure_ascii=False, default=str),
    )


def json_display(field: str, description: str | None = None) -> Callable[[Any, Any], Any]:
    """A read-only admin column or field showing a JSON field indented."""

    @admin.display(description=description or field.replace("_", " "))
    def show(model_admin: Any, obj: Any) -> Any:
        value = getattr(obj, field)
        return model_admin.get_empty_value_display() if value is None else pretty_json(value)

    show.__name__ = f"{field}_json"
    return show


class ToolHubAdmin(admin.ModelAdmin):
    """Base of every ToolHub admin: indented JSON editors."""

    formfield_overrides = {models.JSONField: {"form_class": PrettyJSONFormField}}
    list_per_page = 50


class SuperuserOnlyMixin:
    """An admin only superusers see and use: the platform's own decisions (who is scoped
    where, what may run on ToolHub's machines), never a tenant's staff."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)


class ExactSearchMixin:
    """Search of a big table: exact matches on indexed text columns, never a LIKE '%…%' scan."""

    exact_search_fields: tuple[str, ...] = ()

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        return self.exact_search_fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        matches = Q()
        for field in self.exact_search_fields:
            matches |= Q(**{field: term})
        return queryset.filter(matches), False


class ReadOnlyAdminMixin:
    """For records nobody edits in the admin (ledger, audit, invocation log): view only,
    also for superusers."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(ReadOnlyAdminMixin, admin.TabularInline):
    extra = 0
    can_delete = False


class UnscopedOnlyAdminMixin(_ModelAdminMixinBase):
    """Global configuration and data of no tenant: hidden from tenant-scoped staff, whose
    view must stay inside their tenant (other tenants' tools appear in toolsets, say)."""

    def _scoped(self, request: HttpRequest) -> bool:
        return admin_scope(request).is_tenant

    def has_module_permission(self, request: HttpRequest) -> bool:
        return not self._scoped(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._scoped(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return not self._scoped(request) and super().has_add_permission(request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._scoped(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._scoped(request) and super().has_delete_permission(request, obj)


class _FixedTenantForm(forms.ModelForm):
    """The tenant field of a scoped user's form: shown, not editable, always theirs.

    Kept in the form (disabled) rather than made read-only so that model validation and
    unique constraints involving the tenant still run and show on the page.
    """

    fixed_tenant_id: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].disabled = True
        self.initial["tenant"] = self.fixed_tenant_id


class TenantScopedAdmin(ToolHubAdmin):
    """Admin of a tenant-owned model: rows, choices and the tenant field follow the user's scope.

    `tenant_path` leads from a row to its tenant id ("pk" for Tenant itself);
    `include_shared` makes rows without a tenant (shared tools) visible, read-only, to
    scoped staff.
    """

    tenant_path: str = "tenant"
    include_shared: bool = False
    # How to reach the tenant from rows of related models offered as choices, by model
    # label; other related models with a `tenant` field use it (null = shared).
    related_tenant_paths: dict[str, tuple[str, bool]] = {
        "tenancy.Tenant": ("pk", False),
        "catalog.ToolVersion": ("tool__tenant", True),
    }

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return restrict_to_scope(
            super().get_queryset(request), admin_scope(request),
            tenant_path=self.tenant_path, include_shared=self.include_shared,
        )

    def get_field_queryset(self, db: str | None, db_field: RelatedField, request: HttpRequest) -> QuerySet:
        queryset = super().get_field_queryset(db, db_field, request)
        model = db_field.remote_field.model
        if queryset is None:
            queryset = model._default_manager.using(db).all()
        related = self.related_tenant_paths.get(model._meta.label)
        if related is None:
            try:
                tenant_field = model._meta.get_field("tenant")
            except FieldDoesNotExist:  # not tenant-owned: nothing to restrict
                return queryset
            related = ("tenant", tenant_field.null)
        related_path, shared = related
        return restrict_to_scope(
            queryset, admin_scope(request), tenant_path=related_path, include_shared=shared
        )

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        scope = admin_scope(request)
        if scope.is_tenant and "tenant" in form.base_fields:
            return type(form.__name__, (_FixedTenantForm, form), {"fixed_tenant_id": scope.tenant_id})
        return form

    def get_list_filter(self, request: HttpRequest) -> _ListOrTuple[_ListFilterT]:
        filters = super().get_list_filter(request)
        if admin_scope(request).unrestricted:
            return filters
        # Scoped staff have one tenant: a tenant filter would be noise.
        return [f for f in filters if (f[0] if isinstance(f, tuple) else f) != "tenant"]

    def tenant_id_of(self, obj: models.Model) -> int | None:
        """The tenant of one row, following `tenant_path`."""
        if self.tenant_path == "pk":
            return obj.pk
        *hops, last = self.tenant_path.split("__")
        for hop in hops:
            obj = getattr(obj, hop)
        return getattr(obj, f"{last}_id")

    def is_shared_for(self, request: HttpRequest, obj: models.Model | None) -> bool:
        """True when a scoped user looks at a shared row, which they may only view."""
        return obj is not None and admin_scope(request).is_tenant and self.tenant_id_of(obj) is None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not admin_scope(request).sees_nothing and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self.is_shared_for(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self.is_shared_for(request, obj) and super().has_delete_permission(request, obj)
