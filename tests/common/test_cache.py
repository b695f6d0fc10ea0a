"""The Redis cache backend: Django's semantics, in fewer round trips."""

from __future__ import annotations

import pytest
import redis.client
from django.core.cache import cache


@pytest.fixture
def round_trips(monkeypatch) -> list[tuple]:
    """Every command the cache sends to Redis."""
    sent: list[tuple] = []
    original = redis.client.Redis.execute_command

    def execute_command(self, *args, **kwargs):
        sent.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Redis, "execute_command", execute_command)
    return sent


def test_incr_of_a_counter_adds_in_one_round_trip_and_keeps_its_expiry(round_trips):
    cache.set("counter", 5, 60)
    cache.incr("counter")  # the first use of the script may need a second trip to load it
    round_trips.clear()

    value = cache.incr("counter", 10)
    trips = len(round_trips)

    assert value == 16 and cache.get("counter") == 16
    assert trips == 1
    client = cache._cache.get_client("counter")
    assert 0 < client.ttl(cache.make_key("counter")) <= 60


def test_incr_of_a_missing_key_raises_and_creates_nothing():
    with pytest.raises(ValueError):
        cache.incr("missing")

    assert cache.get("missing") is None


def test_a_counter_started_with_add_counts_from_there():
    assert cache.add("calls", 1, 60)

    assert cache.incr("calls") == 2
    assert cache.incr("calls", -1) == 1
