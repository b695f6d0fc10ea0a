"""A bounded, thread-safe memo of what is built once per version revision (the compiled
validators of arguments and of results): least recently used out first. Pure: memory only."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from apps.gateway.contracts import VersionSpec

T = TypeVar("T")


def revision_key(version: VersionSpec, shaping: Callable[[], list[Any]]) -> str:
    """The version's revision; for a spec built without one (tests, previews), a digest of
    what `shaping()` gives, what the memoized value is built from (only built then: a call
    of a stored version pays nothing for it)."""
    if version.revision:
        return version.revision
    content = json.dumps(shaping(), sort_keys=True, default=str)
    return "content:" + hashlib.sha256(content.encode()).hexdigest()


class RevisionMemo(Generic[T]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: str, build: Callable[[], T]) -> T:
        """The value kept under `key`, or `build()`'s, kept (built outside the lock: two
        threads may build the same one, and the first kept wins). `build` may raise: nothing
        is kept then."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        built = build()
        with self._lock:
            value = self._values.setdefault(key, built)
            self._values.move_to_end(key)
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value
