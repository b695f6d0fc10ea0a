"""Agent keys: random, shown once, stored as a lookup prefix and a SHA-256 digest."""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_PREFIX = "thk_"
_PREFIX_CHARS = 10


def generate_key() -> tuple[str, str, str]:
    """A new key as (full key, lookup prefix, digest). Only the last two are ever stored."""
    lookup = secrets.token_hex(_PREFIX_CHARS // 2)
    full = f"{KEY_PREFIX}{lookup}_{secrets.token_urlsafe(32)}"
    return full, lookup, digest_of(full)


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def split_key(key: str) -> str | None:
    """The lookup prefix of a well-formed key, or None for anything else."""
    if not key.startswith(KEY_PREFIX):
        return None
    lookup, sep, secret = key[len(KEY_PREFIX):].partition("_")
    if not sep or len(lookup) != _PREFIX_CHARS or not secret:
        return None
    return lookup


def digest_matches(key: str, digest: str) -> bool:
    return hmac.compare_digest(digest_of(key), digest)
