"""Reading JSON others wrote: what parses and still cannot be used, found with its place."""

from apps.common.jsontext import HazardKind, OversizedInteger, first_hazard, loads, printable


def test_an_integer_python_will_not_convert_is_kept_as_a_marker_with_its_length():
    assert loads('{"n": -' + "7" * 5000 + ', "m": 12}') == {"n": OversizedInteger(digits=5000), "m": 12}


def test_printable_escapes_lone_surrogates_and_nul_and_keeps_the_rest():
    text = printable("caf\u00e9 \U0001f600 \ud800 a\x00b")

    assert text == "caf\u00e9 \U0001f600 \\ud800 a\\u0000b"
    text.encode("utf-8")


def test_the_first_hazard_is_found_with_its_path_in_keys_values_and_depth():
    assert first_hazard({"a": [1, 2.5, "ok", {"b": True}]}) is None
    assert first_hazard({"a": [1, {"b\udc00": 1}]}).path == ("a", 1, "b\\udc00")
    assert first_hazard({"a": [1, float("inf")]}).kind is HazardKind.NOT_FINITE
    assert first_hazard([[[[]]]], max_depth=3).kind is HazardKind.TOO_DEEP
    assert first_hazard([[[]]], max_depth=3) is None
    assert first_hazard(2**53).problem == "an integer of 16 digits"
