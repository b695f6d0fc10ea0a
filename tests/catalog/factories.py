"""Extra factories of the catalog tests (tests/factories.py is shared and not edited here)."""

from __future__ import annotations

from apps.catalog.models import ToolVersion, VersionStatus
from tests.factories import ToolVersionFactory


def published(**kwargs) -> ToolVersion:
    """A version stored as published (how the services leave it), without going through them."""
    version = ToolVersionFactory(**kwargs)
    ToolVersion.objects.filter(pk=version.pk).update(status=VersionStatus.PUBLISHED)
    version.refresh_from_db()
    return version
