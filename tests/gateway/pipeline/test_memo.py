"""The memo of validators: built once per key, least recently used out first, nothing kept
when building raises."""

import pytest

from apps.gateway.pipeline.memo import RevisionMemo


def test_a_value_is_built_once_and_the_least_recently_used_goes_first():
    built: list[str] = []
    memo: RevisionMemo[str] = RevisionMemo(2)

    def build(key: str) -> str:
        return memo.get_or_build(key, lambda: built.append(key) or key.upper())

    assert [build("a"), build("b"), build("a"), build("c"), build("a"), build("b")] == list("ABACAB")
    assert built == ["a", "b", "c", "b"]  # b was the least recent when c came


def test_a_build_that_raises_keeps_nothing():
    memo: RevisionMemo[str] = RevisionMemo(2)

    def broken() -> str:
        raise ValueError("unusable")

    with pytest.raises(ValueError):
        memo.get_or_build("a", broken)
    assert memo.get_or_build("a", lambda: "A") == "A"
