"""Django's SQL compiler internals (`django.db.models.sql`): the UPDATE of a queryset as SQL
text, which apps/common/db.py puts in a data-modifying CTE.

The internals: `django.db.models.sql.UpdateQuery` (not a documented API), a queryset's
`query.chain(UpdateQuery)` to turn its query into an UPDATE, `add_update_values(values)`
(field names to values or expressions, as `QuerySet.update` takes them), and
`get_compiler(alias).as_sql()` answering `(sql, params)` for one `UPDATE … SET … WHERE …`
statement.

Checked against Django 5.2.19 (the same code since Django 4.2).

If they change: `update_then_insert` (the ledger's state moves with their event row, in one
statement on PostgreSQL) would fail to build its statement, or build one without the
queryset's condition, which is what lets only one of two concurrent movers win.
tests/common/compat/test_django_sql.py fails first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db import models
from django.db.models.sql import UpdateQuery


def update_sql(queryset: models.QuerySet, values: dict[str, Any], *, using: str) -> tuple[str, Sequence[Any]]:
    """The SQL and parameters of `queryset.update(**values)`, not run."""
    # chain(klass) returns a klass; the stubs say only Query.
    query = cast(UpdateQuery, queryset.query.chain(UpdateQuery))
    query.add_update_values(values)
    sql, params = query.get_compiler(using).as_sql()
    return sql, params
