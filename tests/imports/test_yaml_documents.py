"""YAML documents read from libyaml's events: the values JSON would have, the same refusals."""

from __future__ import annotations

import pytest

from apps.imports.openapi import OpenAPIError, parse_document

HEAD = "openapi: 3.0.3\ninfo: {title: T, version: '1'}\n"


def test_yaml_scalars_and_keys_read_as_json_has_them():
    document = parse_document(
        HEAD + "paths: {}\n"
        "x-values:\n"
        "  200: ok\n"
        "  true: yes\n"
        "  date: 2024-01-31\n"
        "  quoted: '12'\n"
        "  number: 12\n"
        "  ratio: 0.5\n"
        "  none: ~\n"
        "  flag: false\n"
        "  base: {a: 1}\n"
        "  merged: {<<: {a: 1, b: 2}, b: 3}\n"
    )
    assert document.content["x-values"] == {
        "200": "ok", "true": True, "date": "2024-01-31", "quoted": "12", "number": 12, "ratio": 0.5,
        "none": None, "flag": False, "base": {"a": 1}, "merged": {"a": 1, "b": 3},
    }


@pytest.mark.parametrize(("text", "says"), [
    (HEAD + "paths: {}\nx: &a [1]\ny: *a\n", "line 5, column 4: YAML aliases (*name) are not accepted"),
    (HEAD + "paths: {}\n? [a]\n: 1\n", "a mapping's keys must be scalars"),
    (HEAD + "paths: {}\n---\nopenapi: 3.0.3\n", "more than one document"),
])
def test_what_yaml_cannot_be_read_as_is_refused_naming_the_line(text, says):
    with pytest.raises(OpenAPIError, match=says.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        parse_document(text)
