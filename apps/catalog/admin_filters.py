"""List filters by tool that respect the user's tenant: choices from the small tool table,
never a SELECT DISTINCT over the filtered (million-row) one."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.common.admin import admin_scope, restrict_to_scope

from .models import Tool


class ScopedToolFilter(admin.SimpleListFilter):
    """The tools the user's tenant can see (its own and the shared ones), by `tool_field`."""

    title = "tool"
    parameter_name = "tool"
    tool_field = "tool_id"
    by_name = False

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[Any, str]]:
        tools = restrict_to_scope(Tool.objects.order_by("name"), admin_scope(request), tenant_path="tenant",
                                  include_shared=True)
        return [(name if self.by_name else pk, name) for pk, name in tools.values_list("pk", "name")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        if not self.by_name and not value.isdigit():
            return queryset.none()
        return queryset.filter(**{self.tool_field: value})


class ScopedToolNameFilter(ScopedToolFilter):
    """For rows that keep the tool's name (the invocation log, where the name may be unknown)."""

    parameter_name = "tool_name"
    tool_field = "tool_name"
    by_name = True
