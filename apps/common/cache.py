"""Django's Redis cache backend, without a new client object per operation, with an `incr`
that costs one round trip, and batches of operations in one round trip (CacheBatch).

Django's RedisCacheClient builds a `redis.Redis` for every cache call; with redis-py 6+
its constructor is costly (it fills a table of response callbacks), and the invoke path
makes several cache calls. Clients are thread-safe and share the pool, so one
per pool is enough. Its `incr` asks EXISTS, then INCRBY: two round trips, and a key that
expires in between comes back as a counter without expiry; here it is one server-side
script. The invoke path's counters go through CacheBatch: the operations before the guards
in one pipeline, the counts after them in another. Measured by `make profile`
(docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

from .compat import django_redis_cache

# INCRBY only an existing key; nil for a missing one (Django's incr raises ValueError then).
_INCR_EXISTING = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""
# SET NX; only when it set the key, count each further key (creating it with its expiry).
# KEYS[1] the key to set, KEYS[2..] the counters; ARGV[1] its value, ARGV[2] its expiry,
# ARGV[3..] the counters' expiries.
_ADD_THEN_COUNT = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return 0 end
for i = 2, #KEYS do
  if redis.call('INCRBY', KEYS[i], 1) == 1 then redis.call('EXPIRE', KEYS[i], ARGV[i + 1]) end
end
return 1
"""
# A counter that exists with an expiry after the call, whether or not it existed before.
_COUNT = """
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if value == tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return value
"""


class ReusedClientRedisCacheClient(RedisCacheClient):
    # Django's private members built on here are read through compat.django_redis_cache.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._redis_class = django_redis_cache.redis_class(self)
        self._values = django_redis_cache.serializer(self)
        self._clients: dict[int, Any] = {}
        self._incr_scripts: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = django_redis_cache.connection_pool(self, write=write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._redis_class(connection_pool=pool)
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

    def run_batch(self, operations: list[_Operation]) -> list[Any]:
        """The operations as one pipeline: one round trip, each operation atomic on its own."""
        pipeline = self.get_client(write=True).pipeline(transaction=False)
        for op in operations:
            if op.name == "add" and op.counters:
                timeouts = [timeout for _, timeout in op.counters]
                keys = [op.keys[0], *(key for key, _ in op.counters)]
                value = self._values.dumps(op.value)
                pipeline.eval(_ADD_THEN_COUNT, len(keys), *keys, value, op.timeout, *timeouts)
            elif op.name == "add":
                pipeline.set(op.keys[0], self._values.dumps(op.value), ex=op.timeout, nx=True)
            elif op.name == "get_many":
                pipeline.mget(op.keys)
            else:
                pipeline.eval(_COUNT, 1, op.keys[0], op.value, op.timeout)
        results: list[Any] = []
        for op, raw in zip(operations, pipeline.execute(), strict=True):
            if op.name == "add":
                results.append(bool(raw))
            elif op.name == "get_many":
                found = zip(op.keys, raw, strict=True)
                results.append({key: self._values.loads(v) for key, v in found if v is not None})
            else:
                results.append(int(raw))
        return results


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        django_redis_cache.use_client_class(self, ReusedClientRedisCacheClient)


@dataclass(frozen=True)
class _Operation:
    name: str  # add, get_many or count
    keys: list[str]
    value: Any = None
    timeout: int | None = None
    counters: tuple[tuple[str, int], ...] = ()  # add: counted only when the key was set


class CacheBatch:
    """Cache operations sent together: in one round trip with ToolHub's Redis backend (a
    pipeline), one after another through the cache API with any other (the file cache of
    `make run`). Each operation is atomic on its own, the batch is not.

    Each method queues an operation and returns where its result will be in `run()`'s list.
    """

    def __init__(self, cache: BaseCache) -> None:
        self._cache = cache
        # Through django.core.cache.cache too, which is a proxy of the backend.
        client = django_redis_cache.client_of(cache)
        self._redis = client if isinstance(client, ReusedClientRedisCacheClient) else None
        self._operations: list[_Operation] = []
        self._key_of: dict[str, str] = {}

    def add(self, key: str, value: Any, timeout: int, *, then_count: Iterable[tuple[str, int]] = ()) -> int:
        """Set `key` unless it exists; the result says whether it was set. Only when it was,
        count each (counter key, expiry) of `then_count`, as `count` would, atomically
        with the set on Redis."""
        counters = tuple((self._key(counter), timeout) for counter, timeout in then_count)
        return self._queue("add", [key], value, timeout, counters)

    def get_many(self, keys: list[str]) -> int:
        """The values found, by key; the result is a dict, as cache.get_many's."""
        return self._queue("get_many", keys)

    def count(self, key: str, timeout: int, delta: int = 1) -> int:
        """Add `delta` to a counter, creating it (expiring after `timeout`) if it is missing;
        the result is the new value."""
        return self._queue("count", [key], delta, timeout)

    def run(self) -> list[Any]:
        if self._redis is None:
            return [self._run_one(op) for op in self._operations]
        results = self._redis.run_batch(self._operations)
        return [
            {self._key_of[key]: value for key, value in result.items()} if op.name == "get_many" else result
            for op, result in zip(self._operations, results, strict=True)
        ]

    def _queue(
        self,
        name: str,
        keys: list[str],
        value: Any = None,
        timeout: int | None = None,
        counters: tuple[tuple[str, int], ...] = (),
    ) -> int:
        self._operations.append(_Operation(name, [self._key(key) for key in keys], value, timeout, counters))
        return len(self._operations) - 1

    def _key(self, key: str) -> str:
        """The key as the backend stores it: Redis commands bypass the cache API's prefix."""
        if self._redis is None:
            return key
        made = self._cache.make_and_validate_key(key)
        self._key_of[made] = key
        return made

    def _run_one(self, op: _Operation) -> Any:
        if op.name == "add":
            added = self._cache.add(op.keys[0], op.value, op.timeout)
            if added:
                for counter, timeout in op.counters:
                    _count(self._cache, counter, 1, timeout)
            return added
        if op.name == "get_many":
            return self._cache.get_many(op.keys)
        return _count(self._cache, op.keys[0], op.value, op.timeout)


def _count(cache: BaseCache, key: str, delta: int, timeout: int | None) -> int:
    if cache.add(key, delta, timeout):
        return delta
    try:
        return int(cache.incr(key, delta))
    except ValueError:  # it expired in between: it is new again
        if cache.add(key, delta, timeout):
            return delta
        return int(cache.incr(key, delta))
