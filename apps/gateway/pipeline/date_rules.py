"""The declared rules the arguments alone can satisfy: date order and maximum span.

Each refusal says its fix twice: in the hint, for a model, and as data in the details
(contract §3), for a program: `swap` names the two fields to exchange, `split` lists
ranges that each satisfy the span, and a date that is no calendar date gets an `example`
that passes every rule with the other arguments as sent.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from apps.common.errors import ErrorDetail, InvalidArgsError
from apps.gateway.text import clip, pointer

MAX_SPLIT_SHOWN = 6
# A split of a range of years into days would be a long list: the first parts are enough to
# start; the call after them asks again.
MAX_SPLIT_PARTS = 100
DATE_RULES = ("date_order", "max_span")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")

Rules = Sequence[Mapping[str, Any]]


def date_rule_error(arguments: Mapping[str, Any], rules: Rules, tool: str) -> InvalidArgsError | None:
    """The refusal of the first date rule the arguments break, or None."""
    rules = [rule for rule in rules if rule.get("type") in DATE_RULES]
    unreal = [field for field in _date_fields(rules) if _unreal(arguments.get(field))]
    if unreal:
        return _not_dates(arguments, unreal, rules, tool)
    for rule in rules:
        dates = _rule_dates(arguments, rule)
        if dates is None:
            continue
        if rule["type"] == "date_order" and dates[1] < dates[0]:
            return _reversed(rule, dates, rules)
        if rule["type"] == "max_span" and _days(dates) > _max_days(rule):
            return _too_long(rule, dates, tool)
    return None


def _date_fields(rules: Rules) -> list[str]:
    return list(dict.fromkeys(field for rule in rules for field in (rule["start"], rule["end"])))


def _as_date(value: Any) -> date | None:
    """A YYYY-MM-DD date; None for other shapes (the schema judges those) and unreal dates."""
    if not isinstance(value, str) or not (match := _ISO_DATE.match(value)):
        return None
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


def _unreal(value: Any) -> bool:
    return isinstance(value, str) and bool(_ISO_DATE.match(value)) and _as_date(value) is None


def _rule_dates(arguments: Mapping[str, Any], rule: Mapping[str, Any]) -> tuple[date, date] | None:
    start, end = _as_date(arguments.get(rule["start"])), _as_date(arguments.get(rule["end"]))
    return (start, end) if start is not None and end is not None else None


def _days(dates: tuple[date, date]) -> int:
    # Both ends count: 2026-01-01..2026-01-31 covers 31 days.
    return (dates[1] - dates[0]).days + 1


def _max_days(rule: Mapping[str, Any]) -> int:
    return max(int(rule["max_days"]), 1)


def _nearest_real(value: str) -> date:
    """The real date nearest to a YYYY-MM-DD that is none: month and day pulled into range."""
    year, month, day = (int(part) for part in value.split("-"))
    year, month = max(year, 1), min(max(month, 1), 12)
    return date(year, month, min(max(day, 1), calendar.monthrange(year, month)[1]))


def _not_dates(arguments: Mapping[str, Any], unreal: list[str], rules: Rules, tool: str) -> InvalidArgsError:
    examples = _real_dates_that_pass(arguments, unreal, rules, tool)
    details = [
        ErrorDetail(
            path=pointer([field]),
            problem="not a calendar date",
            repair={"format": "date", "example": examples.get(field)},
        )
        for field in unreal
    ]
    field, value = unreal[0], str(arguments[unreal[0]])
    year, month = int(value[:4]), int(value[5:7])
    if 1 <= month <= 12:
        hint = f"Use a real calendar date: {year}-{month:02d} has {calendar.monthrange(year, month)[1]} days."
    else:
        hint = "Use a real calendar date as YYYY-MM-DD, with a month from 01 to 12."
    return InvalidArgsError(f"{field} {clip(value)} is not a real date.", hint=hint, details=details)


def _real_dates_that_pass(
    arguments: Mapping[str, Any], unreal: list[str], rules: Rules, tool: str
) -> dict[str, str]:
    """Real dates for the unreal fields that, put in together, break no date rule: the nearest
    real date, or else a date the call already holds (which keeps order and span)."""
    chosen = {field: _nearest_real(str(arguments[field])).isoformat() for field in unreal}
    for field in unreal:
        if date_rule_error({**arguments, **chosen}, rules, tool) is None:
            return chosen
        others = [arguments[f] for f in _date_fields(rules) if f not in unreal and _as_date(arguments.get(f))]
        for other in others:
            if date_rule_error({**arguments, **chosen, field: other}, rules, tool) is None:
                chosen[field] = other
                return chosen
    return chosen if date_rule_error({**arguments, **chosen}, rules, tool) is None else {}


def _reversed(rule: Mapping[str, Any], dates: tuple[date, date], rules: Rules) -> InvalidArgsError:
    start_field, end_field = rule["start"], rule["end"]
    start, end = dates
    repair: dict[str, Any] = {"swap": [pointer([start_field]), pointer([end_field])]}
    # Swapped, the range may still be too long: then the split of the swapped range repairs both.
    for span in rules:
        if span["type"] == "max_span" and {span["start"], span["end"]} == {start_field, end_field}:
            if _days((end, start)) > _max_days(span):
                repair["split"] = split_ranges(span, (end, start))
    return InvalidArgsError(
        f"{end_field} ({end}) is before {start_field} ({start}).",
        hint=rule.get("hint") or f"Swap {start_field} and {end_field} and call again.",
        details=[
            ErrorDetail(path=pointer([end_field]), problem=f"is before {start_field} {start}", repair=repair)
        ],
    )


def split_ranges(rule: Mapping[str, Any], dates: tuple[date, date]) -> list[dict[str, str]]:
    """Consecutive ranges of at most the rule's days covering `dates` (the first
    MAX_SPLIT_PARTS), each keyed by the JSON pointers of the rule's two fields."""
    start, end = dates
    max_days = _max_days(rule)
    parts = []
    for index in range(min(math.ceil(_days(dates) / max_days), MAX_SPLIT_PARTS)):
        first = start + timedelta(days=index * max_days)
        last = min(first + timedelta(days=max_days - 1), end)
        parts.append({pointer([rule["start"]]): first.isoformat(), pointer([rule["end"]]): last.isoformat()})
    return parts


def _too_long(rule: Mapping[str, Any], dates: tuple[date, date], tool: str) -> InvalidArgsError:
    start_field, end_field = rule["start"], rule["end"]
    start, end = dates
    max_days, days = _max_days(rule), _days(dates)
    count = math.ceil(days / max_days)
    ranges = []
    for index in range(min(count, MAX_SPLIT_SHOWN)):
        first = start + timedelta(days=index * max_days)
        ranges.append(f"{first}..{min(first + timedelta(days=max_days - 1), end)}")
    listing = ", ".join(ranges) + (f", … ({count} ranges in all)" if count > MAX_SPLIT_SHOWN else "")
    hint = (
        f"{start_field}..{end_field} may cover at most {max_days} days. Split the range into "
        f"{count} consecutive calls of at most {max_days} days each: {listing}."
    )
    if rule.get("hint"):
        hint = f"{rule['hint']} {hint}"
    problem = f"the range covers {days} days, more than {max_days}"
    repair = {"split": split_ranges(rule, dates)}
    return InvalidArgsError(
        f"The range {start}..{end} covers {days} days; {tool} allows at most {max_days} days per call.",
        hint=hint,
        details=[
            ErrorDetail(path=pointer([start_field]), problem=problem, repair=repair),
            ErrorDetail(path=pointer([end_field]), problem=problem, repair=repair),
        ],
    )
