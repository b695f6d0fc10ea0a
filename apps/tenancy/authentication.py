"""`Authorization: Bearer <agent key>` for the agent API.

The key → agent lookup is on every request's path, so it is cached (keyed by the public
prefix, holding only the digest) and invalidated on revocation; `last_used_at` is written
at most once a minute per key rather than on every request. Lookups only `add` to the
cache, so the refusal a revocation writes there cannot be overwritten by a request that
read the row just before the revocation committed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django.core.cache import cache
from django.utils import timezone
from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions
from rest_framework.request import Request

from apps.common.catalog_generation import CATALOG_GENERATION_KEY

from .keys import digest_matches, split_key
from .models import AgentKey
from .services import agent_key_cache_key

_CACHE_TTL_S = 300
_LAST_USED_EVERY_S = 60
_touched_here: dict[int, float] = {}


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


class _KeyRow(TypedDict):
    pk: int
    digest: str
    agent_id: int
    agent__name: str
    tenant_id: int
    tenant__slug: str


def _load_key(prefix: str) -> tuple[_KeyRow | None, int | None]:
    """The key's row (cached), and the catalog generation, read in the same round trip."""
    key = agent_key_cache_key(prefix)
    found = cache.get_many([key, CATALOG_GENERATION_KEY])
    generation = found.get(CATALOG_GENERATION_KEY)
    cached = found.get(key)
    if cached is not None:
        return cached or None, generation
    row = (
        AgentKey.objects.filter(
            prefix=prefix, revoked_at__isnull=True, agent__active=True, tenant__active=True
        )
        .values("pk", "digest", "agent_id", "agent__name", "tenant_id", "tenant__slug")
        .first()
    )
    cache.add(key, row or {}, _CACHE_TTL_S)
    return row, generation


def authenticated_agent(meta: Mapping[str, Any]) -> AgentPrincipal | None:
    """The agent whose key a request's Authorization header (in `meta`, its WSGI environ)
    carries; None without the header. Raises AuthenticationFailed for another scheme, or a
    key that is unknown or revoked."""
    raw = meta.get("HTTP_AUTHORIZATION", b"")
    header = (raw.encode(HTTP_HEADER_ENCODING) if isinstance(raw, str) else raw).decode("latin-1")
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    # Auth schemes are case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
    if scheme.lower() != AgentKeyAuthentication.keyword.lower() or not key.strip():
        raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <key>'.")
    key = key.strip()
    prefix = split_key(key)
    row, generation = _load_key(prefix) if prefix else (None, None)
    if row is None or not digest_matches(key, row["digest"]):
        raise exceptions.AuthenticationFailed("The agent key is unknown or revoked.")
    _touch(row["pk"])
    return AgentPrincipal(
        agent_id=row["agent_id"],
        agent_name=row["agent__name"],
        tenant_id=row["tenant_id"],
        tenant_slug=row["tenant__slug"],
        key_id=row["pk"],
        catalog_generation=generation,
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
