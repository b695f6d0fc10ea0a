"""List filters that stay cheap on million-row tables and respect the user's tenant.

Django's stock filters for a foreign key (RelatedOnlyFieldListFilter) or a plain column
(AllValuesFieldListFilter) find their choices with a SELECT DISTINCT over the whole table on
every page load; these take their choices from small tables or fixed sets instead.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from apps.catalog.models import Tool

from .admin import admin_scope, restrict_to_scope

# parameter value → (label, least age or None, greatest age or None): the recent windows the
# dashboard links to, and the disjoint age buckets of its unknown entries.
AGES: dict[str, tuple[str, timedelta | None, timedelta | None]] = {
    "1h": ("last hour", None, timedelta(hours=1)),
    "1d": ("last 24 hours", None, timedelta(days=1)),
    "7d": ("last 7 days", None, timedelta(days=7)),
    "1h-1d": ("1 hour to 1 day old", timedelta(hours=1), timedelta(days=1)),
    "1d-7d": ("1 to 7 days old", timedelta(days=1), timedelta(days=7)),
    "gt7d": ("more than 7 days old", timedelta(days=7), None),
}


class AgeFilter(admin.SimpleListFilter):
    """How old a row is, by `date_field` (indexed): a range scan, never a DISTINCT over dates."""

    title = "age"
    parameter_name = "age"
    date_field = "created_at"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, label) for value, (label, _, _) in AGES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() not in AGES:
            return queryset
        _, older_than, younger_than = AGES[self.value()]
        now = timezone.now()
        if older_than is not None:
            queryset = queryset.filter(**{f"{self.date_field}__lt": now - older_than})
        if younger_than is not None:
            queryset = queryset.filter(**{f"{self.date_field}__gte": now - younger_than})
        return queryset


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


def fixed_choices_filter(field: str, title: str, choices: list[str]) -> type[admin.SimpleListFilter]:
    """A filter on `field` offering a fixed set of values instead of a DISTINCT scan."""

    class FixedChoicesFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return [(choice, choice or "(none)") for choice in choices]

        def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
            value = self.value()
            return queryset if value is None else queryset.filter(**{field: value})

    FixedChoicesFilter.title = title
    FixedChoicesFilter.__name__ = f"{field.title().replace('_', '')}Filter"
    return FixedChoicesFilter
