import pytest

from apps.common.errors import ForbiddenError
from apps.gateway.pipeline.authorize import apply_bindings

from .conftest import VALID_ARGS, assert_actionable, make_session, make_version


def _forbidden(arguments, version, session) -> ForbiddenError:
    with pytest.raises(ForbiddenError) as caught:
        apply_bindings(arguments, version, session)
    assert_actionable(caught.value, kind="forbidden", recoverable=False)
    return caught.value


def test_the_bound_field_is_filled_from_the_session(version):
    given = dict(VALID_ARGS)

    bound = apply_bindings(given, version, make_session("u-1"))

    assert bound == {**VALID_ARGS, "user_id": "u-1"}
    assert "user_id" not in given


def test_a_model_sent_value_equal_to_the_session_passes(version):
    bound = apply_bindings({**VALID_ARGS, "user_id": " u-1 "}, version, make_session("u-1"))

    assert bound["user_id"] == "u-1"


def test_a_number_equal_to_the_session_subject_passes():
    version = make_version()

    assert apply_bindings({"user_id": 42}, version, make_session("42"))["user_id"] == "42"


def test_a_null_from_the_model_counts_as_not_sent(version):
    assert apply_bindings({"user_id": None}, version, make_session("u-1")) == {"user_id": "u-1"}


def test_must_match_refuses_another_users_id_without_revealing_the_session(version):
    error = _forbidden({**VALID_ARGS, "user_id": "u-2"}, version, make_session("u-secret"))

    assert error.message == "user_id does not match the current session."
    assert "Leave user_id out" in error.hint
    assert "only act for the current user" in error.hint
    assert [d.path for d in error.details] == ["/user_id"]
    assert "u-secret" not in str(error.as_envelope())


def test_must_match_compares_normalized_forms():
    version = make_version(normalizers={"user_id": ["lower"]})

    assert apply_bindings({"user_id": "ANA"}, version, make_session("ana"))["user_id"] == "ana"


def test_overwrite_replaces_the_model_value_silently():
    version = make_version(context_bindings={"user_id": {"source": "session.subject", "policy": "overwrite"}})

    assert apply_bindings({"user_id": "u-2"}, version, make_session("u-1")) == {"user_id": "u-1"}


def test_no_session_is_forbidden_with_a_hint_for_the_integrator(version):
    error = _forbidden(VALID_ARGS, version, None)

    assert "POST /api/v1/sessions" in error.hint
    assert "X-ToolHub-Session" in error.hint
    assert "integrator" in error.hint


def test_a_tool_without_bindings_needs_no_session():
    version = make_version(context_bindings={})

    assert apply_bindings(VALID_ARGS, version, None) == VALID_ARGS


def test_attributes_of_the_session_can_be_bound():
    version = make_version(
        context_bindings={"store_id": {"source": "session.attributes.store", "policy": "must_match"}}
    )

    assert apply_bindings({}, version, make_session(store="s-9")) == {"store_id": "s-9"}


def test_a_missing_session_attribute_is_forbidden_and_named():
    version = make_version(
        context_bindings={"store_id": {"source": "session.attributes.store", "policy": "must_match"}}
    )

    error = _forbidden({}, version, make_session())

    assert 'no attribute "store"' in error.message
    assert '"attributes": {"store": ...}' in error.hint
