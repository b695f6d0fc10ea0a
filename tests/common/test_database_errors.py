"""A database that cannot be reached answers 503, try again; a query the database cannot run
is a bug, and is never blamed on the database being away."""

from __future__ import annotations

import json

import pytest
from django.db import NotSupportedError, OperationalError, ProgrammingError
from django.http import HttpResponse
from django.test import RequestFactory

from apps.common.middleware import DatabaseUnavailableMiddleware


def _answer(exception: Exception):
    middleware = DatabaseUnavailableMiddleware(lambda request: HttpResponse())
    return middleware.process_exception(RequestFactory().get("/admin/imports/mcp/1/"), exception)


def test_a_lost_connection_answers_503_and_says_to_wait():
    answer = _answer(OperationalError("server closed the connection unexpectedly"))

    assert answer.status_code == 503
    assert "cannot reach its database" in json.loads(answer.content)["message"]


@pytest.mark.parametrize("exception", [
    NotSupportedError("DISTINCT ON fields is not supported by this database backend"),
    ProgrammingError('relation "catalog_tool" does not exist'),
])
def test_a_query_this_database_cannot_run_is_left_to_the_error_handler_not_called_an_outage(exception):
    assert _answer(exception) is None  # Django's 500, logged with its traceback for the developers
