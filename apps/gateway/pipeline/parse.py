"""Stage 1: turn what the model wrote into a JSON object, or say precisely why not."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from apps.common import jsontext
from apps.common.errors import ErrorDetail, InvalidArgsError, InvalidJsonError
from apps.gateway.text import clip, pointer, quote

MAX_DEPTH = 32

_SHAPE_HINT = (
    'Send the arguments as one JSON object, e.g. {"status": "paid", "limit": 20}: keys and '
    "strings in double quotes, no trailing commas, no comments; send {} when the tool takes no "
    "arguments."
)
# json's messages for the mistakes models make most, with what to change.
_TIPS = {
    "Expecting property name enclosed in double quotes": (
        "Keys need double quotes, and there must be no comma before a closing }."
    ),
    "Expecting value": (
        "A value is missing or is not JSON: use double-quoted strings, numbers, true, false or "
        "null (not None, True or single quotes), and no comma before ] or }."
    ),
    "Extra data": "Send exactly one JSON object, with nothing after its closing }.",
    "Unterminated string": "A string is not closed: end it with a double quote.",
    "Invalid control character": "Escape line breaks and tabs inside strings as \\n and \\t.",
}


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _NonFinite(Exception):
    def __init__(self, token: str) -> None:
        self.token = token


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _reject_constant(token: str) -> Any:
    raise _NonFinite(token)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """The arguments as a new dict. Raises InvalidJsonError or InvalidArgsError.

    A string is parsed as JSON ("" or whitespace means no arguments); a mapping is copied.
    """
    if isinstance(raw, bytes | bytearray):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidJsonError("The arguments are not valid UTF-8 text.", hint=_SHAPE_HINT) from None
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        value = _loads(raw)
    elif isinstance(raw, Mapping):
        value = dict(raw)
    else:
        value = raw
    if not isinstance(value, dict):
        raise _not_an_object(value)
    _check_tree(value)
    return value


def _loads(text: str) -> Any:
    try:
        return jsontext.loads(text, object_pairs_hook=_unique_object, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        near = clip(exc.doc[max(exc.pos - 20, 0) : exc.pos + 20].replace("\n", " "), 40)
        tip = next((t for prefix, t in _TIPS.items() if exc.msg.startswith(prefix)), "")
        raise InvalidJsonError(
            f"The arguments are not valid JSON: {exc.msg} at line {exc.lineno}, column "
            f"{exc.colno} (char {exc.pos}), near {near!r}.",
            hint=f"{tip} {_SHAPE_HINT}".strip(),
        ) from None
    except _DuplicateKey as exc:
        raise InvalidJsonError(
            f"The arguments repeat the key {quote(exc.key)}.",
            hint=f"Send each key once: keep only the value you mean for {quote(exc.key)}.",
        ) from None
    except _NonFinite as exc:
        raise InvalidJsonError(
            f"The arguments contain {exc.token}, which is not a JSON number.",
            hint="Use a finite number, or leave the field out if you have no value for it.",
        ) from None
    except RecursionError:
        raise _too_deep() from None


def _not_an_object(value: Any) -> InvalidArgsError:
    got = "null" if value is None else type(value).__name__
    got = {
        "str": "a string",
        "list": "an array",
        "bool": "a boolean",
        "int": "a number",
        "float": "a number",
        "OversizedInteger": "a number",
    }.get(got, got)
    hint = _SHAPE_HINT
    if isinstance(value, str):
        hint = "The arguments were encoded twice: send the object itself, not a JSON string of it."
    elif isinstance(value, list):
        hint = "Send one object with named fields, not an array. " + _SHAPE_HINT
    return InvalidArgsError(
        f"The arguments must be a JSON object, not {got}.",
        hint=hint,
        details=[ErrorDetail(path="/", problem=f"expected an object, got {got}")],
    )


def _too_deep() -> InvalidArgsError:
    return InvalidArgsError(
        f"The arguments are nested deeper than {MAX_DEPTH} levels.",
        hint="Send a flat object with the fields the tool's schema lists; no tool here takes "
        "deeply nested data.",
        details=[ErrorDetail(path="/", problem=f"nesting deeper than {MAX_DEPTH} levels")],
    )


def _check_tree(value: dict[str, Any]) -> None:
    """Depth, text and number checks, also for objects that did not come from `_loads`: what
    passes can be hashed, stored in PostgreSQL and echoed in an answer."""
    hazard = jsontext.first_hazard(value, max_depth=MAX_DEPTH)
    if hazard is None:
        return
    kind, where = hazard.kind, pointer(hazard.path)
    details = [ErrorDetail(path=where, problem=hazard.problem)]
    if kind is jsontext.HazardKind.TOO_DEEP:
        raise _too_deep()
    if kind is jsontext.HazardKind.NUL:
        # PostgreSQL can store no NUL in text or jsonb: refused here, with its place, rather
        # than failing later in the ledger or the invocation log.
        raise InvalidArgsError(
            "The arguments contain a NUL character (\\u0000), which no field accepts.",
            hint="Remove the \\u0000 characters from the value named in details and call again.",
            details=details,
        )
    if kind is jsontext.HazardKind.SURROGATE:
        raise InvalidJsonError(
            f"The arguments are not valid Unicode text at {where}: {hazard.problem}, half of a "
            "UTF-16 pair that is no character on its own.",
            hint="Send text as UTF-8, or escape a character outside the Basic Multilingual Plane as "
            "its full pair (\\ud83d\\ude00 for an emoji); remove any other \\ud800-\\udfff escape.",
            details=details,
        )
    if kind is jsontext.HazardKind.NOT_FINITE:
        # Also what a literal like 1e400 becomes after parsing.
        raise InvalidJsonError(
            f"The arguments contain a number that is not finite (too large, NaN or Infinity) at {where}.",
            hint="Use a finite number of reasonable size, or leave the field out if you have "
            "no value for it.",
            details=details,
        )
    raise InvalidArgsError(
        f"The arguments contain {hazard.problem} at {where}: no JSON number holds it exactly.",
        hint=f"Send integers between -{jsontext.MAX_EXACT_INTEGER} and {jsontext.MAX_EXACT_INTEGER}; "
        "send a longer identifier or amount as a string, if the tool's schema allows one.",
        details=details,
    )
