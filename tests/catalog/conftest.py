"""Fixtures of the catalog tests."""

from __future__ import annotations

import pytest

from apps.catalog.models import ToolVersion, VersionStatus
from tests.factories import ToolFactory, ToolVersionFactory


def published(**kwargs) -> ToolVersion:
    """A version stored as published (how the services leave it), without going through them."""
    version = ToolVersionFactory(**kwargs)
    ToolVersion.objects.filter(pk=version.pk).update(status=VersionStatus.PUBLISHED)
    version.refresh_from_db()
    return version


@pytest.fixture
def tool():
    return ToolFactory(name="search_orders")
