"""Each `invalid_args` detail says its fix as data (issue 24, contract §3): one test per field."""

import re
from datetime import date

import pytest

from apps.common.errors import ErrorDetail, InvalidArgsError
from apps.gateway.pipeline.examples import converted, pattern_example
from apps.gateway.pipeline.rules import check_argument_rules
from apps.gateway.pipeline.schema import validate_arguments

from .conftest import SEARCH_ORDERS_SCHEMA, VALID_ARGS, make_policy, make_version

DATE_ORDER = {"type": "date_order", "start": "start_date", "end": "end_date"}
MAX_SPAN = {"type": "max_span", "start": "start_date", "end": "end_date", "max_days": 90}
DATED = make_version(rules=[DATE_ORDER, MAX_SPAN])


def _details(arguments, version=None) -> list[dict]:
    with pytest.raises(InvalidArgsError) as caught:
        validate_arguments(arguments, version or make_version())
    return caught.value.as_envelope()["details"]


def _rule_details(arguments, version=DATED, policy=None) -> list[dict]:
    with pytest.raises(InvalidArgsError) as caught:
        check_argument_rules(arguments, version, policy or make_policy())
    return caught.value.as_envelope()["details"]


def _with(**properties) -> object:
    schema = {**SEARCH_ORDERS_SCHEMA, "properties": {**SEARCH_ORDERS_SCHEMA["properties"], **properties}}
    return make_version(parameters=schema)


def test_a_detail_sends_path_and_problem_and_never_a_null():
    detail = ErrorDetail(path="/a", problem="bad", repair={"allowed": ["x"], "example": None, "minimum": 0})

    assert detail.as_dict() == {"path": "/a", "problem": "bad", "allowed": ["x"], "minimum": 0}
    assert ErrorDetail("/a", "bad").as_dict() == {"path": "/a", "problem": "bad"}


def test_allowed_lists_the_enum_closest_to_what_was_sent_first():
    (detail,) = _details({**VALID_ARGS, "status": "canceled"})

    assert detail["allowed"] == ["cancelled", "all", "paid", "pending"]
    assert sorted(detail["allowed"]) == sorted(SEARCH_ORDERS_SCHEMA["properties"]["status"]["enum"])


def test_a_const_allows_its_one_value():
    (detail,) = _details({**VALID_ARGS, "status": "x"}, _with(status={"type": "string", "const": "paid"}))

    assert detail["allowed"] == ["paid"]


@pytest.mark.parametrize("limit", [0, 500])
def test_a_number_out_of_range_gets_both_bounds(limit):
    (detail,) = _details({**VALID_ARGS, "limit": limit})

    assert (detail["minimum"], detail["maximum"]) == (1, 100)
    assert "example" not in detail


def test_an_exclusive_integer_bound_is_given_as_the_inclusive_one():
    version = _with(limit={"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 101})

    (detail,) = _details({**VALID_ARGS, "limit": 0}, version)

    assert (detail["minimum"], detail["maximum"], detail["example"]) == (1, 100, 1)


def test_a_string_too_long_gets_max_length_and_one_too_short_an_example():
    version = _with(status={"type": "string", "minLength": 3, "maxLength": 5})

    (too_long,) = _details({**VALID_ARGS, "status": "pending"}, version)
    (too_short,) = _details({**VALID_ARGS, "status": "p"}, version)

    assert too_long["maxLength"] == 5 and too_long["minLength"] == 3
    assert too_short["example"] == "xxx"


def test_a_bad_format_gets_the_format_and_an_example_that_passes():
    (detail,) = _details({**VALID_ARGS, "start_date": "2026-02-30"}, _with(start_date={"type": "string",
                                                                                        "format": "date"}))

    assert detail["format"] == "date"
    assert date.fromisoformat(detail["example"])


def test_a_bad_pattern_gets_the_pattern_and_a_generated_example_that_matches():
    version = _with(status={"type": "string", "pattern": r"^ORD-\d{6}$"})

    (detail,) = _details({**VALID_ARGS, "status": "ORD-8"}, version)

    assert detail["pattern"] == r"^ORD-\d{6}$" and detail["example"] == "ORD-000042"


def test_no_example_is_sent_when_none_can_be_made_that_passes():
    # \b is not generated; and "x" would not match either: an honest silence.
    version = _with(status={"type": "string", "pattern": r"^a\bb$"})

    (detail,) = _details({**VALID_ARGS, "status": "zz"}, version)

    assert detail["pattern"] == r"^a\bb$" and "example" not in detail


def test_a_schema_example_is_preferred_only_when_it_passes():
    passing = _with(status={"type": "string", "pattern": "^[a-z]+-[0-9]$", "examples": ["ab-1"]})
    failing = _with(status={"type": "string", "pattern": "^[a-z]+-[0-9]$", "examples": ["AB-1"]})

    assert _details({**VALID_ARGS, "status": "?"}, passing)[0]["example"] == "ab-1"
    assert _details({**VALID_ARGS, "status": "?"}, failing)[0]["example"] == "a-2"


@pytest.mark.parametrize(("sent", "example"), [("20", 20), ("ten", 1), (2.5, 1), (None, 1)])
def test_a_type_mismatch_gets_the_type_and_the_converted_value_or_an_example(sent, example):
    (detail,) = _details({**VALID_ARGS, "limit": sent})

    assert detail["expected_type"] == "integer" and detail["example"] == example


def test_a_number_sent_for_a_string_is_converted_when_that_passes():
    (detail,) = _details({**VALID_ARGS, "status": 3}, _with(status={"type": "string"}))

    assert detail == {"path": "/status", "problem": "expected a string, got an integer",
                      "expected_type": "string", "example": "3"}


def test_a_missing_field_points_at_itself_with_its_default_or_an_example():
    version = _with(limit={"type": "integer", "minimum": 1, "maximum": 100, "default": 20})

    details = {d["path"]: d for d in _details({"start_date": "2026-01-01"}, version)}

    assert details["/limit"]["missing"] == "/limit" and details["/limit"]["default"] == 20
    assert "example" not in details["/limit"]
    assert details["/status"]["example"] == "pending"
    assert details["/end_date"]["example"] == "2026-01-31"


def test_a_default_that_does_not_pass_is_not_offered():
    version = _with(limit={"type": "integer", "minimum": 1, "maximum": 100, "default": 0})

    (detail,) = _details({k: v for k, v in VALID_ARGS.items() if k != "limit"}, version)

    assert "default" not in detail and detail["example"] == 1


def test_an_unknown_field_is_unexpected_by_its_pointer():
    (detail,) = _details({**VALID_ARGS, "sql_where": "1=1"})

    assert detail["unexpected"] == "/sql_where"


def test_a_reversed_range_names_the_two_pointers_to_swap():
    (detail,) = _rule_details({**VALID_ARGS, "start_date": "2026-03-01", "end_date": "2026-02-01"})

    assert detail["swap"] == ["/start_date", "/end_date"] and "split" not in detail


def test_a_too_long_range_is_split_into_ranges_that_each_pass():
    details = _rule_details({**VALID_ARGS, "start_date": "2026-01-01", "end_date": "2026-06-29"})

    assert details[0]["split"] == details[1]["split"] == [
        {"/start_date": "2026-01-01", "/end_date": "2026-03-31"},
        {"/start_date": "2026-04-01", "/end_date": "2026-06-29"},
    ]
    for part in details[0]["split"]:
        check_argument_rules({**VALID_ARGS, "start_date": part["/start_date"], "end_date": part["/end_date"]},
                             DATED, make_policy())


def test_a_split_lists_at_most_a_hundred_parts():
    policy = make_policy(rule_overrides={"max_span": {"max_days": 1}})
    year = {**VALID_ARGS, "start_date": "2026-01-01", "end_date": "2026-12-31"}

    details = _rule_details(year, policy=policy)

    assert len(details[0]["split"]) == 100
    assert details[0]["split"][-1] == {"/start_date": "2026-04-10", "/end_date": "2026-04-10"}


def test_a_reversed_range_too_long_once_swapped_gets_the_split_of_the_swapped_range():
    (detail,) = _rule_details({**VALID_ARGS, "start_date": "2026-06-29", "end_date": "2026-01-01"})

    assert detail["swap"] == ["/start_date", "/end_date"]
    assert detail["split"][0] == {"/start_date": "2026-01-01", "/end_date": "2026-03-31"}


@pytest.mark.parametrize(
    ("start", "end", "where", "example"),
    [
        ("2026-01-01", "2026-02-30", "/end_date", "2026-02-28"),
        # The nearest real date, 2026-12-31, would come after the end: the end's date keeps the rules.
        ("2026-13-45", "2026-03-31", "/start_date", "2026-03-31"),
    ],
)
def test_a_date_that_is_no_calendar_date_gets_one_that_keeps_the_rules(start, end, where, example):
    (detail,) = _rule_details({**VALID_ARGS, "start_date": start, "end_date": end})

    assert detail == {"path": where, "problem": "not a calendar date", "format": "date", "example": example}


@pytest.mark.parametrize(
    "pattern",
    [r"^ORD-\d{6}$", r"^[A-Z]{2}\d+$", r"^(foo|bar)-[a-z0-9_]{3,8}$", r"^\w+@\w+\.com$", r"^[^@]+$",
     r"^[+-]?\d+(\.\d+)?$", r"^(?:v|V)\d{1,3}\.\d{1,3}$", r"^[a-f0-9]{8}-[a-f0-9]{4}$"],
)
def test_generated_pattern_examples_match_their_pattern(pattern):
    example = pattern_example(pattern)

    assert example is not None and re.search(pattern, example)


@pytest.mark.parametrize("pattern", [r"^a\bb$", r"^(a)\1$", r"^\p{L}+$", r"^a{2000}$", r"(?=a)a"])
def test_patterns_the_generator_does_not_cover_get_no_example(pattern):
    assert pattern_example(pattern) is None


@pytest.mark.parametrize(
    ("value", "expected", "result"),
    [("20", "integer", 20), (" 7 ", "number", 7), ("1.5", "number", 1.5), ("true", "boolean", True),
     (12, "string", "12"), ("ten", "integer", None), ("nan", "number", None), (True, "string", None)],
)
def test_conversions_are_made_only_without_guessing(value, expected, result):
    assert converted(value, expected) == result
