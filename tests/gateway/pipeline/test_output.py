"""Which results pass as MCP structured content: pure, no database."""

from __future__ import annotations

import pytest

from apps.gateway.contracts import _frozen
from apps.gateway.envelopes import ShapedResult, empty_envelope, ok_envelope, result_envelope
from apps.gateway.pipeline.output import output_validator, structured_result

from .conftest import make_version

ORDERS = {
    "type": "object",
    "properties": {"orders": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}},
    "required": ["orders", "total"],
}


def _version(schema=ORDERS, **overrides):
    return make_version(output_schema=_frozen(schema), **overrides)


def test_the_data_of_a_whole_ok_result_that_matches_is_structured():
    version = _version()
    data = {"orders": [{"id": "ORD-000001"}], "total": 1}

    assert structured_result(version, ok_envelope(call_id="c", version=version, data=data)).content == data


def test_an_empty_result_that_matches_is_structured_too():
    version = _version()
    raw = {"orders": [], "total": 0}

    assert structured_result(version, empty_envelope(call_id="c", version=version, raw=raw)).content == raw


@pytest.mark.parametrize(
    ("envelope", "problem"),
    [
        ({"status": "ok", "data": {"orders": [], "total": "1"}}, "does not match the output schema at total"),
        ({"status": "ok", "data": [{"id": 1}]}, "the result is not an object"),
        ({"status": "ok", "data": {"orders": [], "total": 1}, "truncated": {"total": 90}}, "truncated"),
        ({"status": "ok", "data": {"would_run": {}}, "dry_run": True}, "dry run"),
        ({"status": "error", "kind": "timeout"}, "error envelope"),
        ({"status": "accepted", "execution_id": "1"}, "accepted envelope"),
    ],
)
def test_anything_else_is_text_only_with_the_reason(envelope, problem):
    structured = structured_result(_version(), envelope)

    assert structured.content is None and problem in structured.problem


def test_a_truncated_result_is_never_structured_even_when_its_cut_still_matches():
    version = _version(max_chars=200)
    data = {"orders": [{"id": f"ORD-{n:06d}", "note": "x" * 50} for n in range(40)], "total": 40}
    cut = {"orders": data["orders"][:1], "total": 40}
    shaped = ShapedResult(status="ok", data=cut, truncated={"total": 40})

    envelope = result_envelope(call_id="c", version=version, shaped=shaped)
    assert structured_result(version, envelope).content is None


def test_the_validator_is_built_once_per_revision_and_an_unusable_schema_passes_nothing():
    version = _version(revision="10:2026-02-01")

    assert output_validator(version) is output_validator(version)
    broken = _version({"type": "object", "properties": {"x": {"type": "nonsense"}}}, revision="11:x")
    assert output_validator(broken) is None
    assert structured_result(broken, {"status": "ok", "data": {"x": 1}}).problem == (
        "the version's output schema cannot be used"
    )
