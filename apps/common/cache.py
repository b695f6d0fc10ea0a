"""Django's Redis cache backend, without a new client object per operation.

Django's RedisCacheClient builds a `redis.Redis` for every cache call; with redis-py 6+
its constructor alone costs ~0.25 ms (it fills a table of response callbacks), and the
invoke path makes several cache calls. Clients are thread-safe and share the pool, so one
per pool is enough. Measured by `make bench` (docs/performance.md).
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class ReusedClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient
