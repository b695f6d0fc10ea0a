"""The catalog's generation counter survives its key vanishing at any moment (an eviction, a
flush by an operator), also between the moment it is recreated and read back."""

from __future__ import annotations

import time

from django.core.cache import cache

from apps.common import catalog_generation as generation


def test_a_flush_between_recreating_the_counter_and_reading_it_still_gives_a_fresh_generation(monkeypatch):
    cache.delete(generation.CATALOG_GENERATION_KEY)
    before_ms = time.time_ns() // 1_000_000
    # the key is recreated, then flushed before it is read back
    monkeypatch.setattr(cache, "add", lambda *args, **kwargs: True)

    current = generation.catalog_generation()

    assert current >= before_ms
