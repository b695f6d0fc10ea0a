"""Django's Redis cache backend, without a new client object per operation, and with an
`incr` that costs one round trip.

Django's RedisCacheClient builds a `redis.Redis` for every cache call; with redis-py 6+
its constructor alone costs ~0.25 ms (it fills a table of response callbacks), and the
invoke path makes several cache calls. Clients are thread-safe and share the pool, so one
per pool is enough. Its `incr` asks EXISTS, then INCRBY: two round trips, and a key that
expires in between comes back as a counter without expiry. The counters of every invoke
use `incr`, so it is one server-side script here. Measured by `make profile`
(docs/performance.md).
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

# INCRBY only an existing key; nil for a missing one (Django's incr raises ValueError then).
_INCR_EXISTING = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""


class ReusedClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}
        self._incr_scripts: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client

    def incr(self, key: Any, delta: int) -> int:
        client = self.get_client(key, write=True)
        script = self._incr_scripts.get(id(client))
        if script is None:
            # EVALSHA, falling back to EVAL once per server that does not know the script yet.
            script = self._incr_scripts[id(client)] = client.register_script(_INCR_EXISTING)
        value = script(keys=[key], args=[delta])
        if value is None:
            raise ValueError(f"Key '{key}' not found.")
        return int(value)


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient
