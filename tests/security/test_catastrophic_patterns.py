"""Curator-written patterns cannot hang the validator: RE2 matches them in linear time, and
what RE2 cannot run is refused on save (and unavailable if stored before that check)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.exceptions import ValidationError
from jsonschema import Draft202012Validator

from apps.catalog.models import ToolVersion
from apps.common.errors import InvalidArgsError
from apps.gateway.contracts import VersionSpec
from apps.gateway.pipeline.schema import validate_arguments
from tests.factories import ToolFactory
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke
from tests.gateway.pipeline.conftest import make_version

CATASTROPHIC = r"^(a+)+$"
# Python's backtracking `re` needs about 2**40 steps to refuse this; RE2 a few hundred.
EVIL = "a" * 40 + "!"
CODE_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": CATASTROPHIC}},
    "required": ["code"],
    "patternProperties": {CATASTROPHIC: {"type": "string"}},
    "additionalProperties": False,
}


class DeadlinePassed(Exception):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise DeadlinePassed in the middle of whatever runs too long (sre checks signals)."""

    def expire(signum, frame):
        raise DeadlinePassed

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _string_pattern(pattern: str) -> dict:
    return {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}


def _spec(schema: dict) -> VersionSpec:
    return make_version(tool_name="lookup_code", parameters=schema, context_bindings={})


def test_without_a_linear_engine_the_same_check_does_not_finish():
    # The control: jsonschema's stock validator (Python's re) is still busy when the deadline hits.
    validator = Draft202012Validator(CODE_SCHEMA)

    with pytest.raises(DeadlinePassed), deadline(1.0):
        validator.is_valid({"code": EVIL})


@pytest.mark.parametrize(
    "arguments",
    [{"code": EVIL}, {"code": "aaa", EVIL: "x"}, {"code": "aaa", EVIL + "b": "x"}],
    ids=["pattern", "patternProperties", "additionalProperties"],
)
def test_a_catastrophic_pattern_is_refused_in_linear_time(arguments):
    with deadline(2.0), pytest.raises(InvalidArgsError) as refused:
        validate_arguments({**arguments, "code": arguments["code"] * 1000}, _spec(CODE_SCHEMA))

    assert refused.value.kind == "invalid_args"


def test_a_regex_sent_for_format_regex_is_compiled_by_re2_too():
    # Python's re parser recurses once per group: this was a RecursionError, an internal error.
    spec = _spec({"type": "object", "properties": {"filter": {"type": "string", "format": "regex"}}})

    validate_arguments({"filter": "^ORD-[0-9]{6}$"}, spec)
    validate_arguments({"filter": "(" * 5000 + ")" * 5000}, spec)
    with pytest.raises(InvalidArgsError) as refused:
        validate_arguments({"filter": "(?=lookahead)"}, spec)
    assert refused.value.details[0].path == "/filter"


def test_matching_text_still_passes():
    validate_arguments({"code": "a" * 100_000, "aaa": "x"}, _spec(CODE_SCHEMA))


@pytest.mark.django_db
def test_an_invoke_with_a_catastrophic_pattern_answers_at_once(api, publish_tool):
    publish_tool("lookup_code", parameters=CODE_SCHEMA, context_bindings={})
    # A matching call first, so the deadline below times the check and not the first imports.
    assert invoke(api, "lookup_code", {"code": "aaaa"}, call_id="call_0").json()["status"] == "ok"

    with deadline(2.0):
        response = invoke(api, "lookup_code", {"code": EVIL * 100})

    body = response.json()
    assert (body["status"], body["kind"]) == ("error", "invalid_args")
    # The repair's example is made and checked by RE2 too, in linear time.
    assert body["details"] == [
        {"path": "/code", "problem": body["details"][0]["problem"], "pattern": "^(a+)+$", "example": "a"}
    ]
    assert RUNS["tests.echo"] == 1


@pytest.mark.parametrize(
    "schema, says",
    [
        (_string_pattern("^(?=a)b"), "lookahead"),
        (_string_pattern(r"^(a)\1$"), "backreferences"),
        (_string_pattern("^a{5000}$"), "up to 1000"),
        ({"type": "object", "patternProperties": {"(?<=x)y": {}}}, "lookbehind"),
        ({"type": "object", "patternProperties": {"^a$": {}}, "unevaluatedProperties": False},
         "cannot be combined"),
    ],
    ids=["lookahead", "backreference", "huge repetition", "lookbehind key", "unevaluatedProperties"],
)
@pytest.mark.django_db
def test_patterns_re2_cannot_run_are_refused_on_save_with_where_and_why(schema, says):
    with pytest.raises(ValidationError) as refused:
        ToolVersion.objects.create(
            tool=ToolFactory(), number=1, description="d", parameters=schema, side_effect="readonly",
            executor="python", executor_config={"callable": "tests.echo"},
        )

    problems = refused.value.message_dict["parameters"]
    assert len(problems) == 1 and says in problems[0]
    assert "/pattern" in problems[0] or "unevaluatedProperties" in problems[0]


@pytest.mark.django_db
def test_a_version_stored_before_the_check_is_unavailable_not_matched(api, publish_tool):
    version = publish_tool("lookup_code", context_bindings={})
    lookaround = {"type": "object", "properties": {"query": {"type": "string", "pattern": "^(?!x)"}}}
    ToolVersion.objects.filter(pk=version.pk).update(parameters=lookaround)

    body = invoke(api, "lookup_code", {"query": "y"}).json()

    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "unavailable", False)
    assert "linear time" in body["message"]
    assert not RUNS
