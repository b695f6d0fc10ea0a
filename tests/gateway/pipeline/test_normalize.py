import hashlib

import pytest

from apps.common.errors import InvalidArgsError
from apps.common.schemas.normalizers import canonical_date
from apps.gateway.pipeline.normalize import args_hash, normalize_arguments
from apps.gateway.pipeline.parse import parse_arguments

from .conftest import VALID_ARGS, assert_actionable, make_version

NORMALIZED = make_version(
    normalizers={
        "status": ["trim", "lower"],
        "start_date": ["trim", "date"],
        "end_date": ["trim", "date"],
        "request_id": ["volatile"],
    }
)


def _hash(raw, version=NORMALIZED) -> str:
    return args_hash(normalize_arguments(parse_arguments(raw), version), version)


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-31",
        "2026/01/31",
        "2026/1/31",
        "2026-1-31",
        "20260131",
        " 2026-01-31 ",
        "2026-01-31T23:30:00+05:00",
        "2026-01-31T10:00:00Z",
        "2026-01-31 10:00",
        "2026-01-31T10:00:00.123456",
    ],
)
def test_unambiguous_dates_take_the_canonical_form(text):
    assert canonical_date(text) == "2026-01-31"


@pytest.mark.parametrize(
    "text",
    ["31.01.2026", "01/31/2026", "yesterday", "2026-02-30", "2026-W05-1", "2026-01-31Tnoon", ""],
)
def test_ambiguous_or_impossible_dates_are_left_for_the_schema(text):
    assert canonical_date(text) == text


def test_declared_ops_apply_to_their_fields_only():
    normalized = normalize_arguments(
        {
            "status": "  PAID ",
            "start_date": "2026/01/01",
            "end_date": "20260131",
            "limit": 20,
            "note": "  Keep Me  ",
        },
        NORMALIZED,
    )

    assert normalized == {
        "status": "paid",
        "start_date": "2026-01-01",
        "end_date": "2026-01-31",
        "limit": 20,
        "note": "  Keep Me  ",
    }


def test_ops_reach_strings_inside_lists_and_leave_other_values_alone():
    version = make_version(normalizers={"tags": ["trim", "upper"], "limit": ["lower"]})

    normalized = normalize_arguments({"tags": [" a", "b ", 3], "limit": 20}, version)

    assert normalized == {"tags": ["A", "B", 3], "limit": 20}


@pytest.mark.parametrize("value", [8, 8.5, True, None, {"id": " ord-1 "}, [{"id": " a "}, 3]])
def test_ops_never_change_a_values_json_type(value):
    # A value no op can handle is left exactly as sent, for the schema to refuse.
    version = make_version(normalizers={"order_id": ["trim", "upper", "lower", "date"]})

    assert normalize_arguments({"order_id": value}, version) == {"order_id": value}


def test_the_hash_is_sha256_of_rfc8785_canonical_json():
    assert args_hash({"status": "paid", "limit": 20}, make_version()) == hashlib.sha256(
        b'{"limit":20,"status":"paid"}'
    ).hexdigest()


def test_the_hash_ignores_key_order_whitespace_and_declared_case():
    one = _hash('{"status":"paid","start_date":"2026-01-01","end_date":"2026-01-31","limit":20}')
    other = _hash(
        '{ "limit": 20,\n  "end_date": "2026/01/31", "start_date": " 2026-01-01",\n  "status": " Paid " }'
    )

    assert one == other


def test_the_hash_ignores_volatile_fields_but_the_arguments_keep_them():
    first = normalize_arguments({**VALID_ARGS, "request_id": "r-1"}, NORMALIZED)
    second = normalize_arguments({**VALID_ARGS, "request_id": "r-2"}, NORMALIZED)

    assert args_hash(first, NORMALIZED) == args_hash(second, NORMALIZED)
    assert first["request_id"] == "r-1"


def test_the_hash_covers_session_bound_fields():
    # It is taken after the session filled user_id: another user's call is another action.
    assert _hash({**VALID_ARGS, "user_id": "u-1"}) != _hash({**VALID_ARGS, "user_id": "u-2"})


def test_a_different_action_has_a_different_hash():
    assert _hash({**VALID_ARGS, "status": "pending"}) != _hash(VALID_ARGS)
    assert _hash({**VALID_ARGS, "limit": 21}) != _hash(VALID_ARGS)


def test_the_input_is_not_changed():
    given = {**VALID_ARGS, "status": " PAID "}

    normalize_arguments(given, NORMALIZED)

    assert given["status"] == " PAID "


@pytest.mark.parametrize(
    ("value", "path"), [(2**60, "/limit"), (float("inf"), "/limit"), ([1, 2**70], "/limit/1")]
)
def test_numbers_json_cannot_carry_exactly_are_refused(value, path):
    with pytest.raises(InvalidArgsError) as caught:
        args_hash({**VALID_ARGS, "limit": value}, NORMALIZED)

    assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    assert [d.path for d in caught.value.details] == [path]
    assert "as strings" in caught.value.hint


def test_an_unhashable_number_in_a_volatile_field_does_not_matter():
    assert args_hash({**VALID_ARGS, "request_id": 2**60}, NORMALIZED) == args_hash(VALID_ARGS, NORMALIZED)
