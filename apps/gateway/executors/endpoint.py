"""Where an executor's requests go and the credentials they carry, and how those credentials
are kept out of what the model reads: shared by every kind that calls an upstream (the http
executor's requests, the mcp executor's sessions)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

from apps.common.logs import REDACTED


@dataclass(frozen=True)
class Endpoint:
    """Where a version's requests go, and the credentials they carry (never from arguments)."""

    base_url: str
    headers: Mapping[str, str]
    query: Mapping[str, str]

    @cached_property
    def secrets(self) -> tuple[str, ...]:
        """The credential values this endpoint sends, as sent and percent-encoded (an echoed
        URL quotes its query so), longest first: "Bearer <token>" goes before the token.
        A Basic credential counts decoded too, as user:password and the password alone (an
        upstream that decodes it may echo either). Worked out once: a walk of an answer asks
        for them at every string."""
        values = (*self.headers.values(), *self.query.values())
        found = {
            secret for value in values
            for secret in (value, value.partition(" ")[2], *_basic_parts(value)) if secret
        }
        return tuple(sorted(found | {quote(secret, safe="") for secret in found}, key=len, reverse=True))

    def hidden(self, text: str) -> str:
        """`text` without the credentials this endpoint sends: an upstream may quote the key it
        refused in its error message, which the model reads."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def hidden_in(self, data: Any, raw: bytes) -> Any:
        """`data`, parsed from the JSON bytes `raw`, without the credentials this endpoint
        sends: an upstream may echo the request it got (as debugging endpoints do). Only an
        answer whose bytes hold a secret, as written or JSON-escaped, is walked."""
        if not any(form in raw for secret in self.secrets for form in _json_forms(secret)):
            return data
        return _walk_hidden(data, self)


# A password shorter than this is not searched for alone: it would blank out ordinary words of
# an answer (user:password still is). docs/http-tools.md says what redaction cannot catch.
PASSWORD_ALONE_MIN_CHARS = 8


def _basic_parts(value: str) -> tuple[str, ...]:
    """user:password and the password of a Basic credential header value; () for any other."""
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic":
        return ()
    try:
        decoded = base64.b64decode(encoded, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ()
    password = decoded.partition(":")[2]
    return (decoded, password) if len(password) >= PASSWORD_ALONE_MIN_CHARS else (decoded,)


def _json_forms(secret: str) -> set[bytes]:
    """A secret as it may appear in JSON bytes (credential values are printable ASCII)."""
    escaped = json.dumps(secret)[1:-1]
    return {form.encode() for form in (secret, escaped, escaped.replace("/", "\\/"))}


def _walk_hidden(data: Any, endpoint: Endpoint) -> Any:
    if isinstance(data, str):
        return endpoint.hidden(data)
    if isinstance(data, list):
        return [_walk_hidden(item, endpoint) for item in data]
    if isinstance(data, dict):
        return {endpoint.hidden(key): _walk_hidden(value, endpoint) for key, value in data.items()}
    return data
