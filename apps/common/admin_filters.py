"""List filters that stay cheap on million-row tables (the tool filters: apps/catalog/admin_filters.py).

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

# parameter value → (label, least age or None, greatest age or None): the recent windows the
# dashboard links to, and the disjoint age buckets of its unknown entries.
AGES: dict[str, tuple[str, timedelta | None, timedelta | None]] = {
    "1h": ("last hour", None, timedelta(hours=1)),
    "1d": ("last 24 hours", None, timedelta(days=1)),
    "7d": ("last 7 days", None, timedelta(days=7)),
    "30d": ("last 30 days", None, timedelta(days=30)),
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
        age = self.value()
        if age is None or age not in AGES:
            return queryset
        _, older_than, younger_than = AGES[age]
        now = timezone.now()
        if older_than is not None:
            queryset = queryset.filter(**{f"{self.date_field}__lt": now - older_than})
        if younger_than is not None:
            queryset = queryset.filter(**{f"{self.date_field}__gte": now - younger_than})
        return queryset


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
