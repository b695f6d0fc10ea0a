"""A changelist paginator that never counts a million rows on a page load.

Unfiltered, a big table's size is PostgreSQL's own estimate (pg_class.reltuples, kept by
autovacuum/ANALYZE; for a partitioned table, the sum of its partitions'); filtered, rows are
counted only up to a cap. Either way the page costs an index range scan at most `COUNT_CAP`
rows long.
"""

from __future__ import annotations

from functools import cached_property

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet

# Above this many rows, counts are estimated (unfiltered) or capped (filtered).
COUNT_CAP = 10_000


class EstimatedCountPaginator(Paginator):
    estimated = False  # set when `count` is an estimate or a cap, not the exact number

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            raise TypeError("EstimatedCountPaginator pages querysets (the admin's changelists) only")
        if not queryset.query.where:
            estimate = _table_estimate(queryset)
            if estimate is not None and estimate > COUNT_CAP:
                self.estimated = True
                return estimate
        capped = queryset.order_by()[: COUNT_CAP + 1].count()
        if capped > COUNT_CAP:
            self.estimated = True
            return COUNT_CAP
        return capped


def _table_estimate(queryset: QuerySet) -> int | None:
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        # autovacuum never analyzes a partitioned table itself, only its partitions (which
        # are -1 until their first ANALYZE).
        cursor.execute(
            "SELECT CASE WHEN c.relkind = 'p' THEN (SELECT sum(greatest(p.reltuples, 0)) FROM pg_inherits i "
            "JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = c.oid) ELSE c.reltuples END::bigint "
            "FROM pg_class c WHERE c.oid = %s::regclass",
            [queryset.model._meta.db_table],
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] >= 0 else None
