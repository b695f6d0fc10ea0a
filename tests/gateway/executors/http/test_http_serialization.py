"""Requests exactly as OpenAPI serializes them: parameter styles, bodies by media type, and
nulls left out. Pure (what reaches a real upstream is tests/gateway/executors/http/test_http_executor.py).

The style rows are OpenAPI's style-examples table (3.1.1 §"Style Examples", whose label rows
follow RFC 6570: `.blue,black,brown` when not exploded), for a parameter `color` of the
values "" (empty), "blue", ["blue", "black", "brown"] and {"R": 100, "G": 200, "B": 150}.
"""

from __future__ import annotations

import json

import pytest

from apps.common.errors import InvalidArgsError
from apps.gateway.executors.http.mapping import request_parts

EMPTY, STRING, ARRAY, OBJECT = "", "blue", ["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150}
BASE = {"url": "https://api.example.com", "method": "GET"}


def _path(style: str, explode: bool, value):
    config = {
        **BASE,
        "path": "/paint/{color}",
        "serialization": {"color": {"style": style, "explode": explode}},
    }
    return request_parts(config, {"color": value}, idempotency_key=None).path.removeprefix("/paint/")


def _query(style: str, explode: bool, value, **rule) -> str:
    config = {
        **BASE,
        "query": ["color"],
        "serialization": {"color": {"style": style, "explode": explode, **rule}},
    }
    parts = request_parts(config, {"color": value}, idempotency_key=None)
    return "&".join(f"{k}={v}" for k, v in parts.query)


@pytest.mark.parametrize(
    ("style", "explode", "empty", "string", "array", "object"),
    [
        ("matrix", False, ";color", ";color=blue", ";color=blue,black,brown", ";color=R,100,G,200,B,150"),
        (
            "matrix",
            True,
            ";color",
            ";color=blue",
            ";color=blue;color=black;color=brown",
            ";R=100;G=200;B=150",
        ),
        ("label", False, None, ".blue", ".blue,black,brown", ".R,100,G,200,B,150"),
        ("label", True, None, ".blue", ".blue.black.brown", ".R=100.G=200.B=150"),
        ("simple", False, None, "blue", "blue,black,brown", "R,100,G,200,B,150"),
        ("simple", True, None, "blue", "blue,black,brown", "R=100,G=200,B=150"),
    ],
)
def test_path_styles_write_the_rows_of_openapis_table(style, explode, empty, string, array, object):
    assert [_path(style, explode, v) for v in (STRING, ARRAY, OBJECT)] == [string, array, object]
    if empty is None:
        # "" and "." would name another resource (the collection, the same level): refused
        with pytest.raises(InvalidArgsError, match="cannot be"):
            _path(style, explode, EMPTY)
    else:
        assert _path(style, explode, EMPTY) == empty


@pytest.mark.parametrize(
    ("style", "explode", "empty", "string", "array", "object"),
    [
        ("form", False, "color=", "color=blue", "color=blue,black,brown", "color=R,100,G,200,B,150"),
        ("form", True, "color=", "color=blue", "color=blue&color=black&color=brown", "R=100&G=200&B=150"),
        (
            "spaceDelimited",
            False,
            None,
            None,
            "color=blue%20black%20brown",
            "color=R%20100%20G%20200%20B%20150",
        ),
        ("pipeDelimited", False, None, None, "color=blue|black|brown", "color=R|100|G|200|B|150"),
        ("deepObject", True, None, None, None, "color[R]=100&color[G]=200&color[B]=150"),
    ],
)
def test_query_styles_write_the_rows_of_openapis_table(style, explode, empty, string, array, object):
    rows = [
        (v, expected)
        for v, expected in zip((EMPTY, STRING, ARRAY, OBJECT), (empty, string, array, object), strict=True)
        if expected is not None
    ]

    assert [_query(style, explode, v) for v, _ in rows] == [expected for _, expected in rows]


def test_a_delimiter_inside_a_value_is_encoded_and_the_styles_own_is_not():
    assert _query("form", False, ["a,b", "c"]) == "color=a%2Cb,c"
    assert _query("pipeDelimited", False, ["a|b", "c"]) == "color=a%7Cb|c"


def test_deep_object_in_the_query_is_stripes_bracket_notation():
    config = {
        **BASE,
        "query": ["created", "expand"],
        "serialization": {
            "created": {"style": "deepObject", "explode": True},
            "expand": {"style": "deepObject"},
        },
    }

    parts = request_parts(
        config, {"created": {"gte": 1, "lt": None}, "expand": ["a", "b"]}, idempotency_key=None
    )

    # the null member is left out like any other
    assert parts.query == (("created[gte]", "1"), ("expand[]", "a"), ("expand[]", "b"))


def test_a_wire_name_replaces_the_arguments_in_the_query():
    config = {
        **BASE,
        "query": ["date_sent_before"],
        "serialization": {"date_sent_before": {"name": "DateSent<"}},
    }

    parts = request_parts(config, {"date_sent_before": "2026-01-01"}, idempotency_key=None)

    assert parts.query == (("DateSent%3C", "2026-01-01"),)


def test_allow_reserved_sends_reserved_characters_as_they_are_but_those_that_end_a_pair():
    assert _query("form", True, "a/b:c@d?e,f", allow_reserved=True) == "color=a/b:c@d?e,f"
    assert _query("form", True, "a&b=c#d+e", allow_reserved=True) == "color=a%26b%3Dc%23d%2Be"
    assert _query("form", True, "a/b") == "color=a%2Fb"


def test_without_serialization_a_query_object_stays_json_text_as_before():
    parts = request_parts({**BASE, "query": ["f"]}, {"f": {"a": 1}}, idempotency_key=None)

    assert parts.query == (("f", "%7B%22a%22%3A1%7D"),)


def test_multi_segment_keeps_the_slashes_of_a_path_and_encodes_the_rest():
    config = {
        **BASE,
        "path": "/repos/{repo}/contents/{path}",
        "serialization": {"path": {"multi_segment": True}},
    }

    parts = request_parts(config, {"repo": "a/b", "path": "docs/a b.md"}, idempotency_key=None)

    assert parts.path == "/repos/a%2Fb/contents/docs/a%20b.md"


@pytest.mark.parametrize("value", ["../x", "docs/../../admin", "docs/./a", "docs\\..\\a"])
def test_multi_segment_still_refuses_dot_segments(value):
    config = {**BASE, "path": "/contents/{path}", "serialization": {"path": {"multi_segment": True}}}

    with pytest.raises(InvalidArgsError, match="'.' or '..'"):
        request_parts(config, {"path": value}, idempotency_key=None)


def test_a_header_in_simple_style_and_cookies_in_form_style():
    config = {
        **BASE,
        "headers": {"X-Tags": "tags"},
        "cookies": {"theme": "theme", "ids": "ids"},
        "serialization": {"tags": {"style": "simple"}, "ids": {"explode": False}},
    }

    parts = request_parts(
        config, {"tags": ["a", "b"], "theme": "dark blue", "ids": [1, 2]}, idempotency_key=None
    )

    assert parts.headers["X-Tags"] == "a,b"
    assert parts.headers["Cookie"] == "theme=dark%20blue; ids=1,2"


def test_nulls_are_never_sent_in_the_query_headers_or_cookies():
    config = {
        **BASE,
        "query": ["q", "f"],
        "headers": {"X-A": "a"},
        "cookies": {"c": "c"},
        "serialization": {"f": {"style": "deepObject"}},
    }

    parts = request_parts(
        config, {"q": None, "f": {"x": None, "y": 1}, "a": None, "c": None}, idempotency_key=None
    )

    assert parts.query == (("f[y]", "1"),)
    assert "X-A" not in parts.headers and "Cookie" not in parts.headers


def test_a_patch_sends_only_what_the_model_named():
    # GitHub's issues_update with only state: closed
    config = {"url": "https://api.github.test", "method": "PATCH", "path": "/issues/{number}"}

    parts = request_parts(
        config, {"number": 7, "state": "closed", "title": None, "labels": None}, idempotency_key=None
    )

    assert parts.content == b'{"state":"closed"}'


def test_send_null_lets_the_listed_nulls_through_at_any_depth():
    config = {
        "url": "https://api.github.test",
        "method": "PATCH",
        "path": "/issues/{number}",
        "send_null": ["/milestone", "/config/secret", "/lines/-/note"],
    }
    arguments = {
        "number": 7,
        "milestone": None,
        "title": None,
        "config": {"secret": None, "url": None},
        "lines": [{"note": None, "qty": None}, None],
    }

    parts = request_parts(config, arguments, idempotency_key=None)

    assert json.loads(parts.content or b"") == {
        "milestone": None,
        "config": {"secret": None},
        "lines": [{"note": None}],
    }


def test_a_form_body_is_stripes_bracket_notation():
    # Stripe's post_customers: its document gives every array and object a deepObject entry
    config = {
        "url": "https://api.stripe.test",
        "path": "/v1/customers",
        "body_media_type": "application/x-www-form-urlencoded",
        "body_encoding": {"expand": {"style": "deepObject", "explode": True}},
    }
    arguments = {
        "email": "a@b.c",
        "name": "Jenny Rosen",
        "metadata": {"order_id": "ORD-1"},
        "expand": ["a", "b"],
        "items": [{"price": "p", "quantity": 1}],
        "tax_exempt": None,
        "preferred": True,
    }

    parts = request_parts(config, arguments, idempotency_key=None)

    assert parts.content_type == "application/x-www-form-urlencoded"
    assert parts.content == (
        b"email=a%40b.c&name=Jenny%20Rosen&metadata[order_id]=ORD-1&expand[]=a&expand[]=b"
        b"&items[0][price]=p&items[0][quantity]=1&preferred=true"
    )


def test_a_form_body_repeats_an_array_without_an_encoding_entry_as_openapis_default():
    # Twilio's create_message: no encoding objects, and Twilio reads MediaUrl=a&MediaUrl=b
    config = {
        "url": "https://api.twilio.test",
        "path": "/Messages.json",
        "body_media_type": "application/x-www-form-urlencoded",
    }

    parts = request_parts(
        config,
        {"To": "+1", "MediaUrl": ["https://a.test/1.png", "https://a.test/2.png"]},
        idempotency_key=None,
    )

    assert parts.content == (
        b"To=%2B1&MediaUrl=https%3A%2F%2Fa.test%2F1.png&MediaUrl=https%3A%2F%2Fa.test%2F2.png"
    )


def test_a_form_bodys_encoding_object_sets_a_propertys_style_or_content_type():
    config = {
        "url": "https://api.twilio.test",
        "path": "/Messages",
        "body_media_type": "application/x-www-form-urlencoded",
        "body_encoding": {
            "To": {"style": "form", "explode": True},
            "Tags": {"explode": False, "style": "form"},
            "Extra": {"content_type": "application/json"},
        },
    }

    parts = request_parts(
        config, {"To": ["+1", "+2"], "Tags": ["a", "b"], "Extra": {"k": "v"}}, idempotency_key=None
    )

    assert parts.content == b"To=%2B1&To=%2B2&Tags=a,b&Extra=%7B%22k%22%3A%22v%22%7D"


def test_a_multipart_body_gives_each_field_its_content_type():
    config = {"url": "https://api.example.com", "path": "/upload", "body_media_type": "multipart/form-data"}

    parts = request_parts(
        config,
        {"title": "Q3", "count": 2, "meta": {"a": 1}, "tags": ["x", "y"], "gone": None},
        idempotency_key=None,
    )

    boundary = (parts.content_type or "").removeprefix("multipart/form-data; boundary=")
    assert boundary and boundary.encode() not in b"Q3"
    fields = [
        (p.split(b"\r\n")[0], p.split(b"\r\n")[1], p.split(b"\r\n\r\n")[1].removesuffix(b"\r\n"))
        for p in (
            part.removeprefix(b"\r\n")
            for part in (parts.content or b"").split(f"--{boundary}".encode())[1:-1]
        )
    ]
    assert fields == [
        (b'Content-Disposition: form-data; name="title"', b"Content-Type: text/plain", b"Q3"),
        (b'Content-Disposition: form-data; name="count"', b"Content-Type: text/plain", b"2"),
        (b'Content-Disposition: form-data; name="meta"', b"Content-Type: application/json", b'{"a":1}'),
        (b'Content-Disposition: form-data; name="tags"', b"Content-Type: text/plain", b"x"),
        (b'Content-Disposition: form-data; name="tags"', b"Content-Type: text/plain", b"y"),
    ]
    assert (parts.content or b"").endswith(f"--{boundary}--\r\n".encode())


def test_one_argument_can_be_the_whole_body_as_json_or_text():
    as_json = {"url": "https://x.example", "path": "/labels", "body": {"argument": "labels"}}
    as_text = {**as_json, "body": {"argument": "note"}, "body_media_type": "text/plain"}

    json_parts = request_parts(as_json, {"labels": ["bug", None]}, idempotency_key=None)
    text_parts = request_parts(as_text, {"note": "Fixed é"}, idempotency_key=None)

    assert (json_parts.content, json_parts.content_type) == (b'["bug"]', "application/json")
    assert (text_parts.content, text_parts.content_type) == ("Fixed é".encode(), "text/plain; charset=utf-8")


def test_a_form_body_of_an_argument_that_is_not_an_object_is_refused():
    config = {
        "url": "https://x.example",
        "path": "/f",
        "body": {"argument": "v"},
        "body_media_type": "application/x-www-form-urlencoded",
    }

    with pytest.raises(InvalidArgsError) as refused:
        request_parts(config, {"v": "text"}, idempotency_key=None)

    assert [d.path for d in refused.value.details] == ["/v"]


@pytest.mark.parametrize("key", ["", "a[b]", "x]"])
def test_a_key_the_bracket_notation_cannot_carry_is_refused_naming_its_field(key):
    # Stripe's metadata map: `metadata[]=v` would read as an array, `metadata[a[b]]` as nesting
    form = {"url": "https://api.stripe.test", "path": "/v1/customers",
            "body_media_type": "application/x-www-form-urlencoded"}
    query = {"url": "https://api.stripe.test", "method": "GET", "path": "/v1/charges", "query": ["created"],
             "serialization": {"created": {"style": "deepObject", "explode": True}}}

    for config, name in ((form, "metadata"), (query, "created")):
        with pytest.raises(InvalidArgsError) as refused:
            request_parts(config, {name: {"ok": "1", key: "v"}}, idempotency_key=None)

        assert [d.path for d in refused.value.details] == [f"/{name}"]
        assert f"has the key {key!r}" in refused.value.message
