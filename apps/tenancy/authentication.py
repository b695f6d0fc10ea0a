"""`Authorization: Bearer <agent key>` for the agent API.

The key → agent lookup is on every request's path, so it is cached (keyed by the public
prefix, holding only the digest) and invalidated on revocation; `last_used_at` is written
at most once a minute per key rather than on every request. Lookups only `add` to the
cache, so the refusal a revocation writes there cannot be overwritten by a request that
read the row just before the revocation committed.

A caller that reads the cache anyway before it acts (the invoke path: the task's counters)
can take a key this process authenticated before on trust, with a KeyCheck: the key's cache
entry and the catalog generation ride along with its own round trip, and anything changed
(revoked, deactivated, gone from the cache, the catalog moved on) raises StaleKey before
anything was written; the request is then authenticated again in full.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone
from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions
from rest_framework.request import Request

from apps.common.catalog_generation import CATALOG_GENERATION_KEY, catalog_generation

from .keys import digest_matches, split_key
from .models import USABLE_KEYS, AgentKey
from .selectors import agent_keys_recently_used
from .services import agent_key_cache_key

logger = logging.getLogger("toolhub.auth")
_CACHE_TTL_S = 300
_LAST_USED_EVERY_S = 60
_touched_here: dict[int, float] = {}


class _KeyRow(TypedDict):
    pk: int
    digest: str
    agent_id: int
    agent__name: str
    tenant_id: int
    tenant__slug: str


# Keys this process read from the cache or the database, by prefix (a request still checks
# its key against the digest), and the catalog generation it last read: what a KeyCheck has
# to find unchanged. Past the bound it starts over.
_remembered: dict[str, _KeyRow] = {}
_MAX_REMEMBERED = 10_000
_last_generation: list[int | None] = [None]


class StaleKey(Exception):
    """A key taken on trust is not as remembered (or the catalog changed): authenticate the
    request again, in full."""


class KeyCheck:
    """What a key taken on trust owes: its cache entry and the catalog generation, `keys`,
    read by the request's first cache round trip, then `settle`d; `key_confirmed` reads them when
    the request has no such trip."""

    def __init__(self, prefix: str, row: _KeyRow, generation: int) -> None:
        self.prefix = prefix
        self.keys = [agent_key_cache_key(prefix), CATALOG_GENERATION_KEY]
        self.done = False
        self._row = row
        self._generation = generation

    def settle(self, found: Mapping[str, Any]) -> None:
        """`found`: the cache's values of `keys`. Raises StaleKey when anything changed."""
        generation = found.get(CATALOG_GENERATION_KEY)
        if generation is not None:
            _last_generation[0] = generation
        if found.get(self.keys[0]) != self._row or generation != self._generation:
            _remembered.pop(self.prefix, None)
            raise StaleKey(self.prefix)
        self.done = True
        _touch(self._row["pk"])


@dataclass(frozen=True)
class AgentPrincipal:
    """The authenticated caller of the agent API: one agent of one tenant."""

    agent_id: int
    agent_name: str
    tenant_id: int
    tenant_slug: str
    key_id: int
    # The catalog generation read with the key: the request sees the catalog as of its
    # authentication, and saves the round trip of reading it again (None: read it then).
    catalog_generation: int | None = None
    # A key taken on trust: what is still to be checked (None: checked in full).
    key_check: KeyCheck | None = None

    is_authenticated = True

    def __str__(self) -> str:
        return f"{self.tenant_slug}/{self.agent_name}"


def principal_of(request: Request) -> AgentPrincipal:
    """The agent behind a request of the agent API (AgentKeyAuthentication and IsAuthenticated
    let no other caller through)."""
    principal = request.user
    if not isinstance(principal, AgentPrincipal):
        raise TypeError(f"{request.path}: expected an agent authenticated by its key, got {principal!r}")
    return principal


def _load_key(prefix: str) -> tuple[_KeyRow | None, int | None]:
    """The key's row (cached), and the catalog generation, read in the same round trip."""
    key = agent_key_cache_key(prefix)
    found = cache.get_many([key, CATALOG_GENERATION_KEY])
    generation = found.get(CATALOG_GENERATION_KEY)
    cached = found.get(key)
    if cached is not None:
        return cached or None, generation
    row = (
        AgentKey.objects.filter(USABLE_KEYS, prefix=prefix)
        .values("pk", "digest", "agent_id", "agent__name", "tenant_id", "tenant__slug")
        .first()
    )
    cache.add(key, row or {}, _CACHE_TTL_S)
    return row, generation


def _remember(prefix: str, row: _KeyRow, generation: int) -> None:
    if len(_remembered) >= _MAX_REMEMBERED:
        _remembered.clear()
    _remembered[prefix] = row
    _last_generation[0] = generation


# The keys a starting process remembers (the most recently used first).
WARM_KEYS = 100


def agent_keys_warm(*, limit: int = WARM_KEYS) -> int:
    """Remember the keys used most recently (at most `limit`) as their cache entries hold
    them, in one cache round trip, so that an agent's first call to a new process takes its
    key on trust as later calls do, its KeyCheck riding on the task's counters; a key whose
    `last_used_at` was written in the last minute is not touched again before the minute is
    up, as if this process had written it. A key not in the cache is left to its first call.
    Reads keys (the database) and the cache; returns how many keys it remembered. Never
    raises for the database: each key is then read by its first call."""
    try:
        used = agent_keys_recently_used(limit=limit)
    except DatabaseError as exc:
        logger.warning("agent keys not remembered at start: the database failed (%s)", type(exc).__name__)
        return 0
    if not used:
        return 0
    found = cache.get_many([*(agent_key_cache_key(prefix) for prefix, _ in used), CATALOG_GENERATION_KEY])
    generation = catalog_generation(already_read=found.get(CATALOG_GENERATION_KEY))
    now, monotonic_now = timezone.now(), time.monotonic()
    remembered = 0
    for prefix, last_used_at in used:
        row = found.get(agent_key_cache_key(prefix))
        if not row:  # not cached, or {}: a key refused
            continue
        _remember(prefix, row, generation)
        remembered += 1
        age_s = (now - last_used_at).total_seconds() if last_used_at else _LAST_USED_EVERY_S
        if age_s < _LAST_USED_EVERY_S:
            _touched_here.setdefault(row["pk"], monotonic_now - max(age_s, 0.0))
    return remembered


def key_confirmed(principal: AgentPrincipal) -> None:
    """Check a key taken on trust now, unless done already: one cache round trip. Raises
    StaleKey when it is not as remembered."""
    check = principal.key_check
    if check is not None and not check.done:
        check.settle(cache.get_many(check.keys))


_MALFORMED = "The Authorization header must be 'Bearer <key>'."


def authenticated_agent(meta: Mapping[str, Any], *, on_trust: bool = False) -> AgentPrincipal | None:
    """The agent whose key a request's Authorization header (in `meta`, its WSGI environ)
    carries; None without the header. Raises AuthenticationFailed for another scheme, or a
    key that is unknown or revoked.

    `on_trust`: a key this process authenticated before is taken without a round trip, with
    a KeyCheck the caller must see settled before it writes or answers anything.
    """
    raw = meta.get("HTTP_AUTHORIZATION", b"")
    try:
        header = (raw.encode(HTTP_HEADER_ENCODING) if isinstance(raw, str) else raw).decode("latin-1")
    except UnicodeEncodeError:
        raise exceptions.AuthenticationFailed(_MALFORMED) from None
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    # Auth schemes are case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
    if scheme.lower() != AgentKeyAuthentication.keyword.lower() or not key.strip():
        raise exceptions.AuthenticationFailed(_MALFORMED)
    key = key.strip()
    prefix = split_key(key)
    remembered = _remembered.get(prefix) if on_trust and prefix else None
    check = None
    generation = _last_generation[0]
    if prefix and remembered is not None and generation is not None:
        row: _KeyRow | None = remembered
        check = KeyCheck(prefix, remembered, generation)
    else:
        row, generation = _load_key(prefix) if prefix else (None, None)
        if prefix and row is not None and generation is not None:
            _remember(prefix, row, generation)
    if row is None or not digest_matches(key, row["digest"]):
        raise exceptions.AuthenticationFailed("The agent key is unknown or revoked.")
    if check is None:
        _touch(row["pk"])  # a key taken on trust is touched once its check is settled
    return AgentPrincipal(
        agent_id=row["agent_id"],
        agent_name=row["agent__name"],
        tenant_id=row["tenant_id"],
        tenant_slug=row["tenant__slug"],
        key_id=row["pk"],
        catalog_generation=generation,
        key_check=check,
    )


def _touch(key_id: int) -> None:
    # A process that touched the key recently skips even the cache round trip.
    now = time.monotonic()
    if now - _touched_here.get(key_id, -_LAST_USED_EVERY_S) < _LAST_USED_EVERY_S:
        return
    _touched_here[key_id] = now
    if cache.add(f"toolhub:agent-key-used:{key_id}", 1, _LAST_USED_EVERY_S):
        AgentKey.objects.filter(pk=key_id).update(last_used_at=timezone.now())


class AgentKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AgentPrincipal, int] | None:
        principal = authenticated_agent(request.META)
        return None if principal is None else (principal, principal.key_id)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="toolhub"'
