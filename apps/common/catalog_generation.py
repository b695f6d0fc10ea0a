"""One counter that says "the catalog changed": a version published, deprecated or retired,
a grant, policy, tool or toolset edited.

Caches of resolved tools and compiled validators are keyed on it, so every process sees a
change on its next request without tracking who cached what. It sits below catalog and
tenancy because both change what agents see (tools and versions; grants and policies).
"""

from __future__ import annotations

from .generation import Generation

CATALOG_GENERATION_KEY = "toolhub:catalog-generation"
_CATALOG = Generation(CATALOG_GENERATION_KEY)


def catalog_generation(*, already_read: int | None = None) -> int:
    """The current generation; changes (grows) whenever the catalog changes.

    `already_read` is the value a caller fetched together with other keys (authentication
    reads it with the agent key, in one round trip); None reads it now.
    """
    return _CATALOG.read(already_read=already_read)


def catalog_changed() -> None:
    """Invalidate every catalog-derived cache once the current transaction commits
    (at once when there is none), so no process caches a state that is rolled back."""
    _CATALOG.changed()
