import pytest

from apps.common.errors import InvalidArgsError, UnavailableError
from apps.gateway.pipeline.schema import (
    MAX_DETAILS,
    compiled_validator,
    validate_arguments,
    validation_schema,
)

from .conftest import SEARCH_ORDERS_SCHEMA, VALID_ARGS, assert_actionable, make_version


def _refusal(arguments, version) -> InvalidArgsError:
    with pytest.raises(InvalidArgsError) as caught:
        validate_arguments(arguments, version)
    assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    return caught.value


def _paths(error) -> list[str]:
    return [detail.path for detail in error.details]


def test_valid_arguments_pass_without_the_bound_field(version):
    validate_arguments(VALID_ARGS, version)


def test_valid_arguments_pass_with_the_bound_field_sent_anyway(version):
    validate_arguments({**VALID_ARGS, "user_id": "u-1"}, version)


def test_not_cancelled_is_refused_with_the_allowed_statuses(version):
    # The incident behind principle 3: a free-text status reached SQL and found nothing.
    error = _refusal({**VALID_ARGS, "status": "not cancelled"}, version)

    assert "status must be one of: pending, paid, cancelled, all" in error.hint
    assert _paths(error) == ["/status"]
    assert '"not cancelled"' in error.details[0].problem


def test_every_violation_is_listed_with_its_pointer(version):
    error = _refusal(
        {"status": "open", "start_date": "01/02/2026", "end_date": "2026-01-31", "limit": 0, "foo": 1},
        version,
    )

    assert sorted(_paths(error)) == ["/foo", "/limit", "/start_date", "/status"]
    assert "4 problems" in error.message
    for expected in (
        "status must be one of: pending, paid, cancelled, all",
        "limit must be between 1 and 100",
        r"start_date must match ^\d{4}-\d{2}-\d{2}$ (e.g. 2026-01-31)",
        "remove unknown fields: foo",
    ):
        assert expected in error.hint


def test_missing_fields_point_at_themselves_and_the_bound_one_is_not_required(version):
    error = _refusal({"status": "paid", "start_date": "2026-01-01"}, version)

    assert _paths(error) == ["/end_date", "/limit"]
    assert "add the missing fields: end_date" in error.hint
    assert "limit (an integer between 1 and 100)" in error.hint
    assert "user_id" not in error.hint


def test_unknown_fields_are_named_with_the_allowed_ones_but_not_the_bound_one(version):
    error = _refusal({**VALID_ARGS, "stauts": "paid", "sql_where": "1=1"}, version)

    assert sorted(_paths(error)) == ["/sql_where", "/stauts"]
    assert "remove unknown fields: stauts (did you mean status?), sql_where" in error.hint
    assert "allowed fields: status, start_date, end_date, limit." in error.hint


def test_a_number_sent_as_text_gets_the_type_and_the_fix(version):
    error = _refusal({**VALID_ARGS, "limit": "20"}, version)

    assert 'limit must be an integer (send 20, not "20")' in error.hint
    assert error.details[0].problem == "expected an integer, got a string"


@pytest.mark.parametrize("limit", [0, 101])
def test_bounds_are_quoted(version, limit):
    error = _refusal({**VALID_ARGS, "limit": limit}, version)

    assert "limit must be between 1 and 100" in error.hint


def test_a_bound_field_sent_with_the_wrong_type_is_still_checked(version):
    error = _refusal({**VALID_ARGS, "user_id": 7}, version)

    assert _paths(error) == ["/user_id"]
    assert "user_id must be a string" in error.hint


def test_huge_values_are_not_echoed(version):
    error = _refusal({**VALID_ARGS, "status": "x" * 100_000}, version)

    assert len(error.message) < 300
    assert len(error.details[0].problem) < 200


def test_nested_places_are_json_pointers_with_escapes():
    version = make_version(
        context_bindings={},
        parameters={
            "type": "object",
            "properties": {
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"qty": {"type": "integer", "minimum": 1}},
                        "required": ["qty"],
                    },
                },
                "a/b~c": {"type": "string"},
            },
        },
    )

    error = _refusal({"lines": [{"qty": 1}, {"qty": 0}, {}], "a/b~c": 1}, version)

    assert sorted(_paths(error)) == ["/a~1b~0c", "/lines/1/qty", "/lines/2/qty"]
    assert "lines[1].qty must be at least 1" in error.hint
    assert "add the missing fields to lines[2]: qty" in error.hint


@pytest.mark.parametrize(
    ("field_schema", "value", "expected"),
    [
        ({"type": "string", "format": "date"}, "2026-02-30", "when must be a real date as YYYY-MM-DD"),
        ({"type": "string", "minLength": 3, "maxLength": 5}, "ab", "when must be between 3 and 5 characters"),
        ({"type": "integer", "exclusiveMinimum": 0}, 0, "when must be greater than 0"),
        (
            {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            0,
            "when must be an integer at least 1 or null",
        ),
        ({"const": "v1"}, "v2", 'when must be "v1"'),
        ({"type": "array", "maxItems": 2}, [1, 2, 3], "when must have at most 2 items"),
        (
            {"type": "string", "examples": ["09:30"], "pattern": "^[0-9]{2}:[0-9]{2}$"},
            "9h",
            "when must match ^[0-9]{2}:[0-9]{2}$ (e.g. 09:30)",
        ),
    ],
)
def test_each_kind_of_constraint_gets_a_hint_quoting_what_is_allowed(field_schema, value, expected):
    version = make_version(
        context_bindings={},
        parameters={
            "type": "object",
            "properties": {"when": field_schema},
        },
    )

    error = _refusal({"when": value}, version)

    assert expected in error.hint
    assert _paths(error) == ["/when"]


def test_details_are_capped_but_the_message_counts_everything(version):
    error = _refusal({**VALID_ARGS, **{f"extra_{i}": i for i in range(MAX_DETAILS + 10)}}, version)

    assert len(error.details) == MAX_DETAILS
    assert f"{MAX_DETAILS + 10} problems" in error.message
    assert "and 48 more" in error.hint


def test_validation_schema_only_drops_bound_fields_from_required(version):
    schema = validation_schema(version)

    assert schema["required"] == ["status", "start_date", "end_date", "limit"]
    assert schema["properties"]["user_id"] == {"type": "string"}
    assert list(version.parameters["required"]) == SEARCH_ORDERS_SCHEMA["required"]


def test_the_validator_is_built_once_per_revision():
    first = make_version(revision="10:2026-01-01T00:00:00")
    same_revision = make_version(revision="10:2026-01-01T00:00:00")
    edited = make_version(revision="10:2026-01-02T00:00:00")

    assert compiled_validator(first) is compiled_validator(same_revision)
    assert compiled_validator(edited) is not compiled_validator(first)


def test_specs_without_a_revision_share_a_validator_only_when_their_schema_is_the_same():
    assert compiled_validator(make_version()) is compiled_validator(make_version())
    other = make_version(parameters={**SEARCH_ORDERS_SCHEMA, "required": ["status"]})
    assert compiled_validator(other) is not compiled_validator(make_version())


def test_a_broken_stored_schema_makes_the_tool_unavailable_instead_of_unvalidated():
    version = make_version(parameters={"type": "object", "properties": {"a": {"type": "nope"}}})

    with pytest.raises(UnavailableError) as caught:
        validate_arguments({"a": 1}, version)

    assert_actionable(caught.value, kind="unavailable", recoverable=False)
