import json

import pytest

from apps.common.errors import InvalidArgsError, InvalidJsonError
from apps.gateway.pipeline.parse import MAX_DEPTH, parse_arguments

from .conftest import assert_actionable


def _nested(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def test_a_json_object_string_becomes_a_dict():
    assert parse_arguments('{"status": "paid", "limit": 20}') == {"status": "paid", "limit": 20}


@pytest.mark.parametrize("raw", ["", "   ", "\n\t "])
def test_empty_text_means_no_arguments(raw):
    # Models send "" for tools that take no arguments.
    assert parse_arguments(raw) == {}


def test_a_mapping_is_accepted_and_copied():
    given = {"status": "paid"}

    parsed = parse_arguments(given)
    parsed["status"] = "changed"

    assert given == {"status": "paid"}


def test_utf8_bytes_are_accepted():
    assert parse_arguments('{"q": "café"}'.encode()) == {"q": "café"}


def test_bytes_that_are_not_utf8_are_invalid_json():
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(b"\xff\xfe{")

    assert_actionable(caught.value, kind="invalid_json", recoverable=True)


def test_broken_json_says_where_and_shows_the_expected_shape():
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments('{"status": "paid",\n "limit": 20\n "end_date": "x"}')

    error = caught.value
    assert_actionable(error, kind="invalid_json", recoverable=True)
    assert "line 3, column 2 (char 33)" in error.message
    assert '{"status": "paid", "limit": 20}' in error.hint


@pytest.mark.parametrize(
    ("raw", "tip"),
    [
        ("{'status': 'paid'}", "double quotes"),
        ('{"status": "paid",}', "no comma before a closing }"),
        ('{"flag": True}', "not None, True or single quotes"),
        ('{"a": 1} {"b": 2}', "exactly one JSON object"),
    ],
)
def test_common_slips_get_a_specific_tip(raw, tip):
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(raw)

    assert tip in caught.value.hint


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(token):
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(f'{{"amount": {token}}}')

    assert_actionable(caught.value, kind="invalid_json", recoverable=True)
    assert token in caught.value.message


@pytest.mark.parametrize("raw", [{"amount": float("nan")}, '{"amount": 1e400}'])
def test_numbers_that_are_not_finite_after_parsing_are_refused_too(raw):
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(raw)

    assert_actionable(caught.value, kind="invalid_json", recoverable=True)


@pytest.mark.parametrize(
    "raw", ['{"status": "paid", "status": "cancelled"}', '{"filter": {"status": "paid", "status": "all"}}']
)
def test_duplicate_keys_are_refused_and_named(raw):
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(raw)

    assert_actionable(caught.value, kind="invalid_json", recoverable=True)
    assert '"status"' in caught.value.message


def test_nesting_up_to_the_limit_is_accepted():
    assert parse_arguments(_nested(MAX_DEPTH))


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
def test_nesting_deeper_than_the_limit_is_invalid_args(levels):
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments(_nested(levels))

    assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    assert str(MAX_DEPTH) in caught.value.message


def test_deep_mappings_are_refused_too():
    value: dict = {}
    for _ in range(MAX_DEPTH):
        value = {"a": value}

    with pytest.raises(InvalidArgsError):
        parse_arguments(value)


@pytest.mark.parametrize("raw", ["[1, 2]", "3", "null", "true", [1], 3, None, True, 2.5])
def test_anything_but_an_object_is_invalid_args(raw):
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments(raw)

    envelope = assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    assert "must be a JSON object" in caught.value.message
    assert envelope["details"] == [{"path": "/", "problem": caught.value.details[0].problem}]


def test_arguments_encoded_twice_are_explained():
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments('"{\\"status\\": \\"paid\\"}"')

    assert "encoded twice" in caught.value.hint


def test_a_huge_broken_text_is_not_echoed():
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments('{"q": "' + "x" * 100_000 + '" oops}')

    assert len(caught.value.message) < 300


@pytest.mark.parametrize(
    "raw, path",
    [
        ('{"q": "a\\u0000b"}', "/q"),
        ({"items": [1, {"ke\x00y": 2}]}, "/items/1/key"),
        ({"a": {"b": ["ok", "x\x00"]}}, "/a/b/1"),
    ],
    ids=["in a string of JSON text", "in a key of an object", "in a nested value"],
)
def test_nul_characters_are_invalid_args_naming_where(raw, path):
    # PostgreSQL stores no NUL: caught here, not as a failed ledger or log write later.
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments(raw)

    envelope = assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    assert "NUL" in caught.value.message
    assert envelope["details"][0]["path"] == path


@pytest.mark.parametrize(
    "raw, path, problem",
    [
        ('{"ids": [1, ' + "9" * 5000 + "]}", "/ids/1", "an integer of 5000 digits"),
        ('{"n": -' + "1" * 4301 + "}", "/n", "an integer of 4301 digits"),
        ('{"n": 9007199254740993}', "/n", "an integer of 16 digits"),
        ({"n": -(2**60)}, "/n", "an integer of 19 digits"),
    ],
    ids=["too long for Python", "negative, too long for Python", "just past 2**53", "in a mapping"],
)
def test_integers_no_json_number_holds_exactly_are_invalid_args_naming_where(raw, path, problem):
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments(raw)

    envelope = assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    assert envelope["details"] == [{"path": path, "problem": problem}]
    assert path in caught.value.message and "as a string" in caught.value.hint


def test_the_largest_exact_integers_are_accepted():
    assert parse_arguments('{"a": 9007199254740991, "b": -9007199254740991}') == {
        "a": 2**53 - 1, "b": -(2**53 - 1),
    }


def test_an_integer_too_long_for_python_instead_of_an_object_is_a_number():
    with pytest.raises(InvalidArgsError) as caught:
        parse_arguments("9" * 5000)

    assert caught.value.message == "The arguments must be a JSON object, not a number."


@pytest.mark.parametrize(
    "raw, path",
    [
        ('{"q": "a\\ud800"}', "/q"),
        ('{"q": "\\udc00\\ud83d"}', "/q"),
        ('{"q": "a\ud800"}', "/q"),
        ('{"items": [{"\\udfff": 1}]}', "/items/0/\\udfff"),
        ({"a": ["ok", "x\udfff"]}, "/a/1"),
    ],
    ids=["escaped", "a reversed pair", "raw in the text", "in a key", "in a mapping"],
)
def test_lone_surrogates_are_invalid_json_naming_where_not_a_number_problem(raw, path):
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments(raw)

    envelope = assert_actionable(caught.value, kind="invalid_json", recoverable=True)
    assert "lone surrogate" in caught.value.message and "number" not in caught.value.message
    assert envelope["details"][0]["path"] == path
    # What the model reads can be sent as UTF-8 and stored by PostgreSQL.
    json.dumps(envelope, ensure_ascii=False).encode("utf-8")


def test_a_repeated_key_that_is_a_lone_surrogate_is_named_printably():
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments('{"\\ud800": 1, "\\ud800": 2}')

    assert '"\\ud800"' in caught.value.message
    caught.value.message.encode("utf-8")


def test_a_non_finite_number_names_where():
    with pytest.raises(InvalidJsonError) as caught:
        parse_arguments('{"amounts": [1, 1e400]}')

    assert caught.value.details[0].path == "/amounts/1"
