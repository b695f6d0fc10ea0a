"""What the model reads after a call (contract §3): shaped results and the envelopes around them.

Pure: no I/O. Empty results say what emptiness means; long results keep a structured summary
and the first items that fit, and say how many there were, instead of swallowing the
model's context.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from apps.catalog.models import DEFAULT_EMPTY_MEANING
from apps.gateway.contracts import VersionSpec
from apps.gateway.text import join_names

# Budgets below this are raised to it: a summary and a note need some room to say anything.
MIN_LIMIT_CHARS = 100
SUMMARY_MAX_FIELDS = 12
CATEGORY_MAX_VALUES = 10
CATEGORY_MAX_LENGTH = 80


@dataclass(frozen=True)
class ShapedResult:
    """A result ready for its envelope: `status` is "ok" or "empty"."""

    status: str
    data: Any
    truncated: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class _Cut:
    total: int
    shown: int
    unit: str
    where: str = ""
    # The last item shown is itself shortened (an item too big to show whole).
    shortened: bool = False


def json_size(value: Any) -> int:
    """Characters of `value` as compact JSON, the way the API renders it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), cls=DjangoJSONEncoder))


def is_empty(result: Any) -> bool:
    """No items: None, "", [], {}, or an object whose collections are all empty."""
    if result is None:
        return True
    if isinstance(result, str):
        return not result.strip()
    if isinstance(result, list | tuple | Mapping) and not result:
        return True
    if isinstance(result, Mapping):
        collections = [v for v in result.values() if isinstance(v, list | tuple | Mapping)]
        return bool(collections) and not any(collections)
    return False


def shape_result(result: Any, *, version: VersionSpec, budget_chars: int | None = None) -> ShapedResult:
    """The result as the model will see it: empty, whole, or truncated to the limit.

    The limit is the version's `max_chars`, or the batch's `budget_chars` for this call when
    smaller (never below MIN_LIMIT_CHARS); `json_size(data)` never exceeds it.
    """
    if is_empty(result):
        return ShapedResult(status="empty", data=result)
    limit = version.max_chars if budget_chars is None else min(version.max_chars, budget_chars)
    limit = max(limit, MIN_LIMIT_CHARS)
    if json_size(result) <= limit:
        return ShapedResult(status="ok", data=result)
    data, cut = _shrink(result, limit)
    return ShapedResult(status="ok", data=data, truncated=_truncation(cut, version))


def _truncation(cut: _Cut, version: VersionSpec) -> dict[str, Any]:
    bound = set(version.context_bindings)
    filters = [name for name in version.parameters.get("properties", {}) if name not in bound]
    where = f" of {cut.where}" if cut.where else ""
    note = f"Result truncated: showing {cut.shown} of {cut.total} {cut.unit}{where}"
    note += ", that one shortened." if cut.shortened else "."
    if cut.unit == "items":
        note += f" The summary counts all {cut.total}."
    if filters:
        note += f" Narrow the filters ({join_names(filters)}) to see the rest."
    else:
        note += " Ask for a smaller part to see the rest."
    return {"total": cut.total, "shown": cut.shown, "note": note}


def _shrink(value: Any, room: int) -> tuple[Any, _Cut]:
    """`value` reduced to fit `room` characters (room >= MIN_LIMIT_CHARS at the top)."""
    if isinstance(value, list | tuple):
        fitted = _fit_list(list(value), room)
        if fitted is not None:
            return fitted
    elif isinstance(value, str):
        return _cut_text(value, room)
    elif isinstance(value, Mapping):
        return _shrink_mapping(value, room)
    return _cut_text(json.dumps(value, ensure_ascii=False, cls=DjangoJSONEncoder), room)


def _shrink_mapping(value: Mapping[str, Any], room: int) -> tuple[Any, _Cut]:
    """Shrink the largest field when the others fit beside it; else keep the fields that fit."""
    sizes = {key: json_size(child) for key, child in value.items()}
    largest = max(sizes, key=sizes.__getitem__)
    child = value[largest]
    # The other fields, with the largest one's place held by `null` (4 characters).
    left = room - (json_size({**value, largest: None}) - 4)
    if isinstance(child, list | tuple | str | Mapping) and child and left >= MIN_LIMIT_CHARS // 2:
        shrunk, cut = _shrink(child, left)
        if json_size(shrunk) <= left:
            where = f"{largest}.{cut.where}" if cut.where else str(largest)
            return {**value, largest: shrunk}, _Cut(cut.total, cut.shown, cut.unit, where, cut.shortened)
    kept: dict[str, Any] = {}
    used = 2
    for key, child in value.items():
        cost = json_size(key) + 1 + sizes[key] + (1 if kept else 0)
        if used + cost <= room:
            kept[key] = child
            used += cost
    return kept, _Cut(len(value), len(kept), "fields")


def _fit_list(items: list[Any], room: int) -> tuple[dict[str, Any], _Cut] | None:
    """{"summary", "items": first k that fit} within `room`; None if not even the frame fits."""
    summary = _summary(items)
    # The summary may take at most half the room: the model needs examples too.
    fields = list(summary.get("fields", {}))
    while fields and json_size({"summary": summary, "items": []}) > room // 2:
        fields.pop()
        summary["fields"] = {name: summary["fields"][name] for name in fields}
        if not fields:
            del summary["fields"]
    used = json_size({"summary": summary, "items": []})
    if used > room:
        return None
    shown = 0
    for item in items:
        cost = json_size(item) + (1 if shown else 0)
        if used + cost > room:
            break
        used += cost
        shown += 1
    if shown == 0 and room - used >= MIN_LIMIT_CHARS // 2:
        # Better a shortened first item than none at all.
        first, _ = _shrink(items[0], room - used)
        if json_size(first) <= room - used:
            return {"summary": summary, "items": [first]}, _Cut(len(items), 1, "items", shortened=True)
    return {"summary": summary, "items": items[:shown]}, _Cut(len(items), shown, "items")


def _cut_text(text: str, room: int) -> tuple[str, _Cut]:
    """The longest prefix of `text` whose JSON form (quotes, escapes) fits `room`."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if json_size(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low], _Cut(len(text), low, "characters")


def _summary(items: list[Any]) -> dict[str, Any]:
    """Total count, value counts of low-cardinality text fields, min/max/sum of numbers.

    Built from C-level passes (type sets, Counter, min/max/sum): results can have many rows.
    """
    summary: dict[str, Any] = {"total": len(items)}
    rows = [item for item in items if isinstance(item, Mapping)]
    fields: dict[str, Any] = {}
    for name in dict.fromkeys(chain.from_iterable(rows)):
        values = [row[name] for row in rows if name in row]
        kinds = set(map(type, values)) - {type(None)}
        if kinds and kinds <= {int, float}:
            numbers = [value for value in values if value is not None]
            stats: dict[str, Any] = {"min": min(numbers), "max": max(numbers)}
            # A sum of identifiers means nothing.
            if name != "id" and not str(name).endswith("_id"):
                total = sum(numbers)
                stats["sum"] = round(total, 6) if isinstance(total, float) else total
            fields[name] = stats
        elif kinds == {str}:
            counts = Counter(values)
            counts.pop(None, None)
            if (
                len(counts) <= CATEGORY_MAX_VALUES
                and len(counts) < counts.total()
                and all(len(value) <= CATEGORY_MAX_LENGTH for value in counts)
            ):
                fields[name] = dict(counts.most_common())
        if len(fields) >= SUMMARY_MAX_FIELDS:
            break
    if fields:
        summary["fields"] = fields
    return summary


def ok_envelope(
    *,
    call_id: str,
    version: VersionSpec,
    data: Any,
    cached: bool = False,
    truncated: Mapping[str, Any] | None = None,
    execution_id: Any = None,
) -> dict[str, Any]:
    return {
        "status": "ok",
        "call_id": call_id,
        "tool": version.tool_name,
        "version": version.number,
        "data": data,
        "cached": cached,
        "truncated": dict(truncated) if truncated else None,
        "execution_id": None if execution_id is None else str(execution_id),
    }


def empty_envelope(*, call_id: str, version: VersionSpec, raw: Any) -> dict[str, Any]:
    return {
        "status": "empty",
        "call_id": call_id,
        "tool": version.tool_name,
        "version": version.number,
        "meaning": version.empty_meaning or DEFAULT_EMPTY_MEANING,
        "raw": raw,
    }


def result_envelope(
    *,
    call_id: str,
    version: VersionSpec,
    shaped: ShapedResult,
    cached: bool = False,
    execution_id: Any = None,
) -> dict[str, Any]:
    """The ok or empty envelope of a shaped result."""
    if shaped.status == "empty":
        return empty_envelope(call_id=call_id, version=version, raw=shaped.data)
    return ok_envelope(
        call_id=call_id,
        version=version,
        data=shaped.data,
        cached=cached,
        truncated=shaped.truncated,
        execution_id=execution_id,
    )


def _poll_envelope(status: str, call_id: str, execution_id: Any, poll: str | None) -> dict[str, Any]:
    return {
        "status": status,
        "call_id": call_id,
        "execution_id": str(execution_id),
        "poll": poll or f"/api/v1/executions/{execution_id}",
    }


def accepted_envelope(*, call_id: str, execution_id: Any, poll: str | None = None) -> dict[str, Any]:
    """An async call is running; the result is at `poll`."""
    return _poll_envelope("accepted", call_id, execution_id, poll)


def pending_approval_envelope(*, call_id: str, execution_id: Any, poll: str | None = None) -> dict[str, Any]:
    """The call waits for an operator's approval; the outcome will be at `poll`."""
    return _poll_envelope("pending_approval", call_id, execution_id, poll)
