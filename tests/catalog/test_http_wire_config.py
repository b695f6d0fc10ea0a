"""The wire keys of an http version (serialization, cookies, body, body_media_type,
body_encoding, send_null) are checked against its parameters and OpenAPI's rules on every
save. Pure: no database."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.definitions import validate_definition

_TEXT = {"type": "string", "description": "A value."}
PARAMETERS = {
    "type": "object",
    "properties": {
        "repo": _TEXT,
        "path": _TEXT,
        "created": {"type": "object", "properties": {"gte": {"type": "integer"}}, "description": "Bounds."},
        "tags": {"type": "array", "items": _TEXT, "description": "Tags."},
        "theme": _TEXT,
        "note": _TEXT,
        "milestone": {"type": ["string", "null"], "description": "A milestone, or null to clear it."},
        "config": {
            "type": "object",
            "properties": {"url": _TEXT, "secret": {"type": ["string", "null"]}},
            "additionalProperties": False,
            "description": "The hook's config.",
        },
        "lines": {
            "type": "array",
            "items": {"type": "object", "properties": {"note": _TEXT}, "additionalProperties": False},
            "description": "Lines.",
        },
    },
    "additionalProperties": False,
}
GOOD = {
    "url": "https://api.example.com",
    "method": "PATCH",
    "path": "/repos/{repo}/contents/{path}",
    "query": ["created"],
    "headers": {"X-Tags": "tags"},
    "cookies": {"theme": "theme"},
    "serialization": {
        "path": {"multi_segment": True},
        "created": {"style": "deepObject", "explode": True, "name": "created_at"},
        "tags": {"style": "simple", "explode": False},
        "theme": {"style": "form"},
    },
    "body_media_type": "application/x-www-form-urlencoded",
    "body_encoding": {
        "config": {"style": "deepObject", "explode": True},
        "note": {"content_type": "text/plain"},
    },
    "send_null": ["/milestone", "/config/secret", "/lines/-/note"],
}


def config_problems(config: dict[str, Any]) -> list[str]:
    errors = validate_definition(
        parameters=PARAMETERS,
        normalizers={},
        context_bindings={},
        rules=[],
        executor="http",
        executor_config=config,
        approval={},
    )
    return errors.get("executor_config", [])


def test_a_mapping_using_every_wire_key_is_sound():
    assert config_problems(GOOD) == []


def test_a_send_null_pointer_into_a_schema_described_elsewhere_is_trusted():
    parameters = {
        "type": "object",
        "properties": {"lines": {"anyOf": [{"type": "array", "items": _TEXT}, {"type": "null"}]}},
        "additionalProperties": False,
    }

    errors = validate_definition(
        parameters=parameters,
        normalizers={},
        context_bindings={},
        rules=[],
        executor="http",
        executor_config={"url": "https://x.example", "send_null": ["/lines", "/lines/-"]},
        approval={},
    )

    assert errors == {}


def test_one_argument_as_the_text_body_is_sound():
    assert (
        config_problems(
            {
                "url": "https://x.example",
                "path": "/notes",
                "body": {"argument": "note"},
                "body_media_type": "text/plain",
            }
        )
        == []
    )


@pytest.mark.parametrize(
    ("change", "says"),
    [
        pytest.param(
            {"serialization": {"created": {"style": "diamond"}}}, "is not one of", id="an unknown style"
        ),
        pytest.param(
            {"serialization": {"path": {"style": "deepObject"}}},
            "style deepObject is not one of a path parameter (simple, label, matrix)",
            id="deepObject in the path",
        ),
        pytest.param(
            {"serialization": {"created": {"style": "matrix"}}},
            "style matrix is not one of a query parameter",
            id="matrix in the query",
        ),
        pytest.param(
            {"serialization": {"tags": {"style": "form"}}},
            "style form is not one of a header parameter (simple)",
            id="form in a header",
        ),
        pytest.param(
            {"serialization": {"theme": {"style": "simple"}}},
            "style simple is not one of a cookie parameter (form)",
            id="simple in a cookie",
        ),
        pytest.param(
            {"serialization": {"created": {"style": "deepObject", "explode": False}}},
            "deepObject is defined only with explode true",
            id="deepObject not exploded",
        ),
        pytest.param(
            {"serialization": {"missing": {}}},
            "serialization names missing, which the parameters",
            id="serialization of an unknown argument",
        ),
        pytest.param(
            {"serialization": {"note": {"style": "form"}}},
            "which the mapping does not put in the path",
            id="serialization of a body argument",
        ),
        pytest.param(
            {"serialization": {"created": {"multi_segment": True}}},
            "multi_segment applies to a path parameter only",
            id="multi_segment in the query",
        ),
        pytest.param(
            {"serialization": {"path": {"allow_reserved": True}}},
            "allow_reserved applies to a query parameter only",
            id="allow_reserved in the path",
        ),
        pytest.param(
            {"serialization": {"tags": {"name": "T"}}},
            "name renames a query parameter or cookie only",
            id="a wire name for a header",
        ),
        pytest.param(
            {"cookies": {"theme": "missing"}},
            "cookies names missing, which the parameters",
            id="a cookie of an unknown argument",
        ),
        pytest.param(
            {"cookies": {"sessionid": "theme"}},
            "cookies cannot set sessionid from arguments",
            id="a session cookie",
        ),
        pytest.param(
            {"cookies": {"XSRF-TOKEN": "theme"}}, "cookies cannot set XSRF-TOKEN", id="a csrf cookie"
        ),
        pytest.param(
            {"body": {"argument": "missing"}},
            "body names missing, which the parameters",
            id="a body argument that does not exist",
        ),
        pytest.param(
            {"body": {"argument": "note", "extra": 1}},
            "is not valid under any of",
            id="a body object with another key",
        ),
        pytest.param({"body_media_type": "application/xml"}, "is not one of", id="an unknown media type"),
        pytest.param(
            {"body_media_type": "text/plain"},
            'text/plain needs body {"argument": name}',
            id="a text body of many arguments",
        ),
        pytest.param(
            {"body_media_type": "application/json"},
            "body_encoding applies to form and multipart",
            id="an encoding for a json body",
        ),
        pytest.param(
            {"body_encoding": {"created": {"style": "form"}}},
            "body_encoding names created, which the body",
            id="an encoding of a query argument",
        ),
        pytest.param(
            {"body_encoding": {"note": {"style": "matrix"}}}, "is not one of", id="a path style in a form"
        ),
        pytest.param(
            {"send_null": ["/missing"]},
            "send_null '/missing' points nowhere in the body: no property",
            id="send_null of an unknown member",
        ),
        pytest.param(
            {"send_null": ["/config/nope"]},
            "send_null '/config/nope' points nowhere",
            id="send_null of an unknown nested member",
        ),
        pytest.param(
            {"send_null": ["/note/-"]}, "'-' stands for an array's items", id="send_null items of a string"
        ),
        pytest.param(
            {"send_null": ["/created"]},
            "send_null '/created' points nowhere",
            id="send_null of a query argument",
        ),
        pytest.param({"headers": {"Cookie": "theme"}}, "headers cannot set Cookie", id="the Cookie header"),
    ],
)
def test_a_wire_key_that_cannot_work_is_refused_on_save(change, says):
    problems = config_problems({**GOOD, **change})

    assert any(says in problem for problem in problems), problems
