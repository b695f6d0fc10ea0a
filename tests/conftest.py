"""Shared fixtures: factories live in tests/factories.py."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache (keys, rate limits, compiled validators)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def imports_in_process(monkeypatch):
    """The OpenAPI imports the admin starts run at once in the test's process, through the
    task's own code (as a worker runs it), so the page the admin redirects to shows the report."""
    from apps.imports.tasks import openapi_import_task

    monkeypatch.setattr(openapi_import_task, "delay", lambda run_id: openapi_import_task.apply(args=[run_id]))
