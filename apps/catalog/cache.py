"""One counter that says "the catalog changed": versions published, grants or policies edited.

Caches of resolved tools and compiled validators are keyed on it, so a change anywhere is
seen by every process on its next request without tracking who cached what.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction

_KEY = "toolhub:catalog-generation"


def catalog_generation() -> int:
    generation = cache.get(_KEY)
    if generation is None:
        cache.add(_KEY, 1, timeout=None)
        generation = cache.get(_KEY, 1)
    return int(generation)


def _bump() -> None:
    try:
        cache.incr(_KEY)
    except ValueError:
        cache.set(_KEY, 2, timeout=None)


def catalog_changed() -> None:
    """Invalidate every catalog-derived cache once the current transaction commits."""
    transaction.on_commit(_bump)
