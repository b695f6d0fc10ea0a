"""Canary: Django's Redis cache backend still has the private members ToolHub's backend
builds on (apps/common/compat/django_redis_cache.py). No Redis is contacted: building a
client and a pool connects to nothing."""

from __future__ import annotations

import inspect
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

from apps.common.cache import RedisCache as ToolHubRedisCache
from apps.common.cache import ReusedClientRedisCacheClient
from apps.common.compat import django_redis_cache

LOCATION = "redis://127.0.0.1:1/0"  # never connected to


def test_the_backend_builds_its_client_from_class_in_cache():
    cache = RedisCache(LOCATION, {})

    django_redis_cache.use_client_class(cache, ReusedClientRedisCacheClient)

    assert isinstance(cache._cache, ReusedClientRedisCacheClient), (
        "RedisCache no longer builds its client from `_class` in `_cache`"
    )
    assert django_redis_cache.client_of(cache) is cache._cache


def test_the_client_keeps_its_pools_redis_class_and_serializer():
    client = RedisCacheClient([LOCATION])
    params = list(inspect.signature(RedisCacheClient._get_connection_pool).parameters)

    assert params == ["self", "write"], f"RedisCacheClient._get_connection_pool's parameters are now {params}"
    assert isinstance(django_redis_cache.connection_pool(client, write=True), redis.ConnectionPool)
    assert django_redis_cache.redis_class(client) is redis.Redis
    values = django_redis_cache.serializer(client)
    assert values.loads(values.dumps({"n": 1})) == {"n": 1}


def test_the_clients_operations_take_their_client_from_get_client():
    asked: list[dict[str, Any]] = []

    class _Answers:
        def get(self, key: str) -> bytes:
            return ReusedClientRedisCacheClient([LOCATION])._values.dumps("cached")

        def set(self, key: str, value: bytes, ex: int | None = None) -> None:
            pass

    class _Watched(RedisCacheClient):
        def get_client(self, key: Any = None, *, write: bool = False) -> Any:
            asked.append({"key": key, "write": write})
            return _Answers()

    client = _Watched([LOCATION])

    assert client.get("k", None) == "cached"
    client.set("k", "v", 60)
    assert asked == [{"key": "k", "write": False}, {"key": "k", "write": True}], (
        "RedisCacheClient's operations no longer take their client from get_client(key, write=...)"
    )


def test_toolhub_backend_reuses_one_client_per_pool():
    cache = ToolHubRedisCache(LOCATION, {})
    client = django_redis_cache.client_of(cache)

    assert isinstance(client, ReusedClientRedisCacheClient)
    assert client.get_client("a", write=True) is client.get_client("b", write=True)
