"""A value PostgreSQL refuses (DataError) is the request's fault: a 400 saying so, never the
503 "cannot reach its database" of an outage, in the API and outside it."""

from __future__ import annotations

import json

import pytest
from django.db import DataError, OperationalError, connection
from django.test import RequestFactory

from apps.common.api import exception_handler
from apps.common.middleware import DatabaseUnavailableMiddleware

pytestmark = pytest.mark.django_db


def refused_by_postgres() -> DataError:
    """The DataError PostgreSQL raises for text with a NUL, as any query would meet it."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT %s::text", ["order\x00"])
    except DataError as error:
        return error
    raise AssertionError("PostgreSQL stored a NUL")


def test_the_api_answers_a_refused_value_as_the_requests_fault():
    # when
    response = exception_handler(refused_by_postgres(), {})

    # then
    assert response.status_code == 400
    assert response.data["kind"] == "invalid_args" and response.data["recoverable"] is True
    assert "refused a value of this request" in response.data["message"]
    assert "cannot reach its database" not in json.dumps(response.data)
    assert "Retry-After" not in response


def test_the_admin_answers_a_refused_value_as_the_requests_fault_and_an_outage_as_503():
    middleware = DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    request = RequestFactory().post("/admin/imports/openapi/")

    refused = middleware.process_exception(request, refused_by_postgres())
    outage = middleware.process_exception(request, OperationalError("connection refused"))

    assert refused is not None and refused.status_code == 400 and "Retry-After" not in refused
    assert "cannot reach its database" not in refused.content.decode()
    assert outage is not None and outage.status_code == 503 and outage["Retry-After"] == "5"
    assert "cannot reach its database" in outage.content.decode()
