"""Canary: Django's UpdateQuery still compiles a queryset's UPDATE, condition included, as
`QuerySet.update` runs it (apps/common/compat/django_sql.py)."""

from __future__ import annotations

import inspect

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import F
from django.db.models.sql import UpdateQuery

from apps.common.compat.django_sql import update_sql


def test_update_query_keeps_the_methods_used():
    assert list(inspect.signature(UpdateQuery.add_update_values).parameters) == ["self", "values"]
    assert "klass" in inspect.signature(UpdateQuery.chain).parameters


@pytest.mark.django_db
def test_the_update_sql_is_the_statement_queryset_update_runs_with_its_condition():
    queryset = User.objects.filter(username="ada", is_active=True)
    values = {"is_active": False, "first_name": F("last_name")}
    ran: list[tuple[str, list[object]]] = []

    def record(execute, sql, params, many, context):
        ran.append((sql, list(params)))
        return execute(sql, params, many, context)

    sql, params = update_sql(queryset, values, using=connection.alias)
    with connection.execute_wrapper(record):
        queryset.update(**values)

    assert sql.startswith("UPDATE ") and " WHERE " in sql, f"not one conditional UPDATE: {sql}"
    assert "ada" in list(params), "the queryset's condition is not in the UPDATE"
    assert ran == [(sql, list(params))], "UpdateQuery no longer compiles what QuerySet.update runs"
