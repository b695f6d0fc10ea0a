"""Encryption at rest of credential values: MultiFernet (AES-128-CBC + HMAC-SHA256) over the
keys of `TOOLHUB_ENCRYPTION_KEYS`, newest first.

The newest key encrypts; every listed key decrypts, so a new key is put first, then
`manage.py rotate_credentials` re-encrypts everything under it, then the old key may be
removed. Without the setting (development, `make run`, tests) one key is derived from
SECRET_KEY; production settings require the setting, so changing SECRET_KEY there never
makes stored credentials unreadable.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

__all__ = ["InvalidToken", "decrypt", "encrypt", "key_problem", "reencrypt"]


def key_problem(key: str) -> str | None:
    """Why `key` is not a Fernet key, or None."""
    try:
        Fernet(key)
    except ValueError:
        return (
            "not a Fernet key (32 url-safe base64-encoded bytes); make one with "
            "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`"
        )
    return None


def _derived_key(secret_key: str) -> str:
    digest = hashlib.sha256(b"toolhub.upstreams.credentials:" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    if not keys:
        return MultiFernet([Fernet(_derived_key(secret_key))])
    for index, key in enumerate(keys):
        if problem := key_problem(key):
            raise ImproperlyConfigured(f"TOOLHUB_ENCRYPTION_KEYS: key {index + 1} is {problem}.")
    return MultiFernet([Fernet(key) for key in keys])


def _current() -> MultiFernet:
    keys = tuple(k.strip() for k in settings.TOOLHUB_ENCRYPTION_KEYS if k.strip())
    return _fernet(keys, settings.SECRET_KEY)


def encrypt(value: str) -> str:
    """The value as a token under the newest key."""
    return _current().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    """The value of a token made under any configured key (InvalidToken otherwise)."""
    return _current().decrypt(token.encode()).decode()


def reencrypt(token: str) -> str:
    """The same value as a token under the newest key (InvalidToken if no key reads it)."""
    return _current().rotate(token.encode()).decode()
