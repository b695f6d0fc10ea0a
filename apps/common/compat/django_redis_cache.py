"""Django's Redis cache backend (`django.core.cache.backends.redis`): the private members
apps/common/cache.py builds on.

The internals:

- `RedisCache._class`: the client class the backend instantiates (lazily, in `_cache`);
  ToolHub puts its own client class there.
- `RedisCache._cache`: that client instance (a cached property), which `CacheBatch` reaches
  to send a batch as one pipeline.
- `RedisCacheClient._get_connection_pool(write)`: the pool of the server for a read or a write.
- `RedisCacheClient._client`: the redis-py client class (`redis.Redis`).
- `RedisCacheClient._serializer`: what turns values into bytes and back (`dumps`, `loads`).
- and that the client's operations take their redis-py client from `get_client(key,
  write=...)`, the hook ToolHub overrides to reuse one client per pool.

Checked against Django 5.2.19 with redis-py 8.2.0.

If they change: a renamed member raises AttributeError when the cache backend is first
used (loud). Quieter: if `_class` were no longer read, Django's own client would be used,
so `incr` would take two round trips again (and a key expiring in between would come back
without expiry) and batches would run one operation at a time; if the operations stopped
calling `get_client`, each would build a new redis-py client again (slower, not wrong).
tests/common/compat/test_django_redis_cache.py fails first in each case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

if TYPE_CHECKING:
    from django.core.cache.backends.base import BaseCache
    from django.core.cache.backends.redis import RedisSerializer
    from redis import ConnectionPool, Redis


def use_client_class(cache: RedisCache, client_class: type[RedisCacheClient]) -> None:
    """Make `cache` build its client from `client_class` (call it in the backend's __init__)."""
    backend: Any = cache
    backend._class = client_class


def client_of(cache: BaseCache) -> RedisCacheClient | None:
    """The client a Redis cache backend built (through django.core.cache.cache's proxy too),
    or None for any other backend."""
    client = getattr(cache, "_cache", None)
    return client if isinstance(client, RedisCacheClient) else None


def connection_pool(client: RedisCacheClient, *, write: bool) -> ConnectionPool:
    """The pool of the server that takes `client`'s reads, or its writes."""
    raw: Any = client
    pool: ConnectionPool = raw._get_connection_pool(write)
    return pool


def redis_class(client: RedisCacheClient) -> type[Redis]:
    """The redis-py client class `client` makes its clients of."""
    raw: Any = client
    cls: type[Redis] = raw._client
    return cls


def serializer(client: RedisCacheClient) -> RedisSerializer:
    """How `client` turns values into bytes (`dumps`) and back (`loads`)."""
    raw: Any = client
    found: RedisSerializer = raw._serializer
    return found
