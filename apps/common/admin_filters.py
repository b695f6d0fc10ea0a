"""List filters that stay cheap on million-row tables (the tool filters: apps/catalog/admin_filters.py).

Django's stock filters for a foreign key (RelatedOnlyFieldListFilter) or a plain column
(AllValuesFieldListFilter) find their choices with a SELECT DISTINCT over the whole table on
every page load, and its date_hierarchy with one over the dates; these take their choices
from small tables, fixed sets, the calendar, or a walk of an index from value to value.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib import admin
from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
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


class MonthFilter(admin.SimpleListFilter):
    """A calendar month (UTC) by `date_field` (indexed), the latest `months` of them: the
    date hierarchy's drill-down without its DISTINCT over dates, and a range that PostgreSQL
    prunes a time-partitioned table's partitions by."""

    title = "month"
    parameter_name = "month"
    date_field = "created_at"
    months = 12

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        start = timezone.now().astimezone(UTC).date().replace(day=1)
        choices = []
        for _ in range(self.months):
            choices.append((f"{start:%Y-%m}", f"{start:%B %Y}"))
            start = (start - timedelta(days=1)).replace(day=1)
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None:
            return queryset
        try:
            start = datetime.strptime(value, "%Y-%m").replace(tzinfo=UTC)
            end = (start + timedelta(days=31)).replace(day=1)
        except (ValueError, OverflowError):  # not a month, or December 9999
            return queryset.none()
        return queryset.filter(**{f"{self.date_field}__gte": start, f"{self.date_field}__lt": end})


class _ValueFilter(admin.SimpleListFilter):
    """Rows whose `field` equals the chosen value."""

    field: str

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset if value is None else queryset.filter(**{self.field: value})


def fixed_choices_filter(field: str, title: str, choices: list[str]) -> type[admin.SimpleListFilter]:
    """A filter on `field` offering a fixed set of values instead of a DISTINCT scan."""

    class FixedChoicesFilter(_ValueFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return [(choice, choice or "(none)") for choice in choices]

    return _named(FixedChoicesFilter, field, title)


def indexed_values_filter(field: str, title: str) -> type[admin.SimpleListFilter]:
    """A filter on `field` offering the values the user's rows hold, found by `indexed_values`:
    for columns of a few dozen values written in code (an audit action) that no fixed list
    keeps up with."""

    class IndexedValuesFilter(_ValueFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return [(value, value) for value in indexed_values(model_admin.get_queryset(request), field)]

    return _named(IndexedValuesFilter, field, title)


def _named(filter_class: type[_ValueFilter], field: str, title: str) -> type[_ValueFilter]:
    filter_class.field = filter_class.parameter_name = field
    filter_class.title = title
    filter_class.__name__ = f"{field.title().replace('_', '')}Filter"
    return filter_class


def indexed_values(queryset: QuerySet, field: str) -> list[str]:
    """The distinct values of `field` in `queryset`'s rows, ascending, by a loose index scan:
    each value is the least one above the previous, one index descent (per partition) each,
    however many rows hold it. Needs an index on the columns `queryset` is filtered on by
    equality (the tenant), then `field`; without one it is a scan per value."""
    query = queryset.query
    if sum(1 for refs in query.alias_refcount.values() if refs) > 1:  # trimmed joins stay, unreferenced
        name = queryset.model.__name__
        raise TypeError(f"indexed_values reads one table; these {name} rows are filtered through a join")
    connection = connections[queryset.db]
    quote = connection.ops.quote_name
    table, column = quote(queryset.model._meta.db_table), quote(queryset.model._meta.get_field(field).column)
    try:
        scope, params = query.get_compiler(queryset.db).compile(query.where)
        scope = f"({scope}) AND "
    except FullResultSet:  # unfiltered
        scope, params = "", []
    except EmptyResultSet:  # a user who sees no rows
        return []
    # min() rather than ORDER BY … LIMIT 1: the same index descent, and SQLite (`make run`) has it too.
    sql = (
        f"WITH RECURSIVE found(value) AS (SELECT min({column}) FROM {table} WHERE {scope}TRUE "
        f"UNION ALL SELECT (SELECT min({column}) FROM {table} WHERE {scope}{column} > found.value) "
        f"FROM found WHERE found.value IS NOT NULL) SELECT value FROM found WHERE value IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *params])
        return [row[0] for row in cursor.fetchall()]
