"""Fixtures of the tenancy tests: their agent (its key: `issued`, tests/conftest.py), and an
API client using a key."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import AgentFactory


@pytest.fixture
def agent():
    return AgentFactory(tenant__slug="acme", name="support-bot")


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def rows_containing(text: str) -> dict[str, int]:
    """Every table of the database with rows whose text form contains `text`."""
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(
                f"SELECT count(*) FROM {connection.ops.quote_name(table)} t WHERE strpos(t::text, %s) > 0",
                [text],
            )
            (count,) = cursor.fetchone()
            if count:
                found[table] = count
    return found
