"""Stage 2: give each value its canonical form, and each action a hash that identifies it.

Whitespace, case and date spellings make a meaningful value look wrong (`" ord-000008"`,
`"Paid"`) and the same action look new. The version's declared normalizers run before the
schema check, so that the schema judges the canonical value; they only ever rewrite strings
into strings, so a value's JSON type is never changed, and a value they cannot fix is left
for the schema to refuse. Once the session's bindings have filled the arguments, `args_hash`
(RFC 8785 JSON, SHA-256, volatile fields left out) identifies the action: the ledger keys on
it and the loop guard counts it, so the same call from another end user is another action.
What each normalizer does is the catalog's (apps/common/schemas/normalizers.py).
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import rfc8785

from apps.common.errors import ErrorDetail, InvalidArgsError
from apps.common.schemas.normalizers import normalize_value
from apps.gateway.contracts import VersionSpec
from apps.gateway.text import pointer

MAX_SAFE_INTEGER = 2**53 - 1

# rfc8785 orders keys by their UTF-16 code units (str.encode("utf-16be")): its codec is found
# and imported with this module, not by a process's first call (0.3 ms).
codecs.lookup("utf-16be")


def normalize_arguments(arguments: Mapping[str, Any], version: VersionSpec) -> dict[str, Any]:
    """A new dict: every field kept, each declared string normalized (other values untouched)."""
    normalizers = version.normalizers
    return {
        name: normalize_value(value, normalizers[name]) if name in normalizers else value
        for name, value in arguments.items()
    }


def args_hash(arguments: Mapping[str, Any], version: VersionSpec) -> str:
    """SHA-256 hex of the RFC 8785 canonical JSON of `arguments` without the volatile fields.

    Given the arguments as they will run (normalized, bound fields filled from the session).
    Raises InvalidArgsError for numbers RFC 8785 cannot encode.
    """
    volatile = {name for name, ops in version.normalizers.items() if "volatile" in ops}
    hashed = {name: value for name, value in arguments.items() if name not in volatile}
    try:
        canonical = rfc8785.dumps(hashed)
    except rfc8785.CanonicalizationError:
        where = _unencodable_path(hashed) or ()
        raise InvalidArgsError(
            f"A number in the arguments cannot be represented exactly in JSON (at {pointer(where)}).",
            hint=f"Send integers between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER} and finite "
            "numbers only; send longer identifiers as strings.",
            details=[ErrorDetail(path=pointer(where), problem="number outside the exact JSON range")],
        ) from None
    return hashlib.sha256(canonical).hexdigest()


def _unencodable_path(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The path of the first value RFC 8785 refuses, None if there is none."""
    if isinstance(value, Mapping):
        items: Iterable[tuple[str | int, Any]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        try:
            rfc8785.dumps(value)
        except rfc8785.CanonicalizationError:
            return path
        return None
    for key, child in items:
        found = _unencodable_path(child, (*path, key))
        if found is not None:
            return found
    return None
