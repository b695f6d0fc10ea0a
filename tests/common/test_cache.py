"""The Redis cache backend: Django's semantics, in fewer round trips."""

from __future__ import annotations

import pytest
import redis.client
from django.core.cache import cache

from apps.common.cache import CacheBatch


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


@pytest.fixture(params=["redis", "file"])
def any_cache(request, tmp_path):
    """ToolHub's Redis backend, and the file cache `make run` uses."""
    if request.param == "redis":
        return cache
    from django.core.cache.backends.filebased import FileBasedCache

    return FileBasedCache(str(tmp_path), {})


def test_a_batch_answers_each_operation_as_the_cache_api_would(any_cache):
    any_cache.set("taken", 7, 60)
    any_cache.set("counter", 41, 60)
    batch = CacheBatch(any_cache)
    claim_free = batch.add("free", 1, 60)
    claim_taken = batch.add("taken", 1, 60)
    found = batch.get_many(["taken", "free", "absent"])
    existing = batch.count("counter", 60)
    new = batch.count("new-counter", 60, delta=3)

    results = batch.run()

    assert (results[claim_free], results[claim_taken]) == (True, False)
    assert results[found] == {"taken": 7, "free": 1}  # the batch sees its own earlier writes
    assert (results[existing], results[new]) == (42, 3)
    stored = any_cache.get_many(["free", "counter", "new-counter"])
    assert stored == {"free": 1, "counter": 42, "new-counter": 3}


def test_a_batch_is_one_round_trip_on_redis_and_its_counters_expire(round_trips):
    pipelines: list[int] = []
    original = redis.client.Pipeline.execute

    def execute(self, *args, **kwargs):
        pipelines.append(len(self.command_stack))
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redis.client.Pipeline, "execute", execute)
        batch = CacheBatch(cache)
        batch.add("seen", 1, 60)
        batch.get_many(["a", "b"])
        batch.count("rate", 61)
        batch.add("claim", 1, 60, then_count=[("identical", 30)])
        batch.run()

    assert pipelines == [4] and round_trips == []
    client = cache._cache.get_client("rate")
    assert 0 < client.ttl(cache.make_key("rate")) <= 61
    assert 0 < client.ttl(cache.make_key("seen")) <= 60
    assert 0 < client.ttl(cache.make_key("identical")) <= 30


def test_an_add_counts_its_counters_only_when_it_sets_its_key(any_cache):
    any_cache.set("taken", 1, 60)
    any_cache.set("counter", 4, 60)
    batch = CacheBatch(any_cache)
    first = batch.add("claim", 1, 60, then_count=[("counter", 60), ("new-counter", 30)])
    again = batch.add("taken", 1, 60, then_count=[("counter", 60)])

    results = batch.run()

    assert (results[first], results[again]) == (True, False)
    stored = any_cache.get_many(["claim", "counter", "new-counter"])
    assert stored == {"claim": 1, "counter": 5, "new-counter": 1}
