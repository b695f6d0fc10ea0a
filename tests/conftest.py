"""Shared fixtures: factories live in tests/factories.py."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache (keys, rate limits, compiled validators)."""
    cache.clear()
    yield
    cache.clear()
