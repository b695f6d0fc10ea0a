"""How the gateway quotes values and names places in errors a model reads (the pipeline's
stages and the executors alike).

Quoted values are cut, so a model that sent a megabyte does not get it echoed back, and
their lone surrogates and NULs escaped, so the answer and the log can hold them; places
are JSON pointers (RFC 6901) in `details` and readable field names in messages and hints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from apps.common import json_pointer
from apps.common.jsontext import printable

MAX_QUOTE = 80


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """`text` cut to at most `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(value: Any, limit: int = MAX_QUOTE) -> str:
    """A value as JSON text (strings in double quotes), cut to `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(printable(text), limit)


def pointer(parts: Iterable[str | int]) -> str:
    """The JSON pointer of a path; "/" for the top level, as the contract's details use."""
    return json_pointer.pointer(parts) or "/"


def field_label(parts: Sequence[str | int]) -> str:
    """A field as a model would write it in prose: `status`, `items[0].qty`."""
    if not parts:
        return "arguments"
    label = ""
    for part in parts:
        if isinstance(part, int):
            label += f"[{part}]"
        else:
            label += f".{clip(part, 40)}" if label else clip(part, 40)
    return label


def join_names(names: Iterable[Any], limit: int = 12) -> str:
    """`a, b, c`, with the rest counted when there are more than `limit`."""
    items = [clip(str(n), 40) for n in names]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
