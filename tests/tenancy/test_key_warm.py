"""A starting web process remembers the keys used last, so an agent's first call to it takes its
key on trust as later calls do; what it remembers is still checked against the cache by each
call, so a key revoked after the start is refused by the next call."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from apps.tenancy import authentication
from apps.tenancy.authentication import StaleKey, agent_keys_warm, authenticated_agent, key_confirmed
from apps.tenancy.models import AgentKey
from apps.tenancy.services import agent_key_revoke

from .conftest import bearer

pytestmark = pytest.mark.django_db

SESSIONS = "/api/v1/sessions"


@pytest.fixture
def fresh_process(monkeypatch):
    """Starts this process again: it has authenticated no key and touched none."""

    def start() -> None:
        monkeypatch.setattr(authentication, "_remembered", {})
        monkeypatch.setattr(authentication, "_touched_here", {})
        monkeypatch.setattr(authentication, "_last_generation", [None])

    return start


def _meta(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def _used(issued, *, seconds_ago: float) -> None:
    """The key authenticated by another process (its cache entry made), last used
    `seconds_ago` (its once-a-minute mark in the cache gone with the minute)."""
    authenticated_agent(_meta(issued.secret))
    if seconds_ago >= 60:
        authentication.cache.delete(f"toolhub:agent-key-used:{issued.key.pk}")
    AgentKey.objects.filter(pk=issued.key.pk).update(
        last_used_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


def test_a_key_used_last_is_taken_on_trust_by_the_first_call(
    issued, fresh_process, django_assert_num_queries
):
    # given: a key another process used
    _used(issued, seconds_ago=5)
    fresh_process()

    # when: a process starts
    remembered = agent_keys_warm()

    # then: its first call takes the key on trust (its check rides on the call's own round trip)
    assert remembered == 1
    with django_assert_num_queries(0):
        principal = authenticated_agent(_meta(issued.secret), on_trust=True)
    assert principal.key_check is not None
    assert (principal.agent_id, principal.key_id) == (issued.key.agent_id, issued.key.pk)
    key_confirmed(principal)


def test_a_wrong_secret_is_refused_even_for_a_remembered_key(issued, fresh_process):
    _used(issued, seconds_ago=5)
    fresh_process()
    agent_keys_warm()

    with pytest.raises(AuthenticationFailed, match="unknown or revoked"):
        authenticated_agent(_meta(f"thk_{issued.key.prefix}_{'x' * 43}"), on_trust=True)


def test_a_key_revoked_after_the_start_is_refused_by_the_next_call(
    issued, fresh_process, django_capture_on_commit_callbacks
):
    # given: a started process that remembered the key
    _used(issued, seconds_ago=5)
    fresh_process()
    agent_keys_warm()

    # when: the key is revoked
    with django_capture_on_commit_callbacks(execute=True):
        agent_key_revoke(key=issued.key, actor="test")

    # then: the next call's check finds it changed, and the key in full is refused
    principal = authenticated_agent(_meta(issued.secret), on_trust=True)
    with pytest.raises(StaleKey):
        key_confirmed(principal)
    with pytest.raises(AuthenticationFailed, match="unknown or revoked"):
        authenticated_agent(_meta(issued.secret))


def test_a_key_not_in_the_cache_is_left_to_its_first_call(issued, fresh_process):
    # given: a key used, whose cache entry has gone
    _used(issued, seconds_ago=5)
    fresh_process()
    authentication.cache.delete(authentication.agent_key_cache_key(issued.key.prefix))

    # when
    remembered = agent_keys_warm()

    # then: its first call authenticates it in full
    assert remembered == 0
    assert authenticated_agent(_meta(issued.secret), on_trust=True).key_check is None


@pytest.mark.parametrize(("seconds_ago", "written"), [(10, False), (120, True)])
def test_last_used_is_written_at_most_once_a_minute_across_a_start(
    issued, fresh_process, monkeypatch, seconds_ago, written
):
    # given: a key last used `seconds_ago` by another process, remembered by a starting one
    _used(issued, seconds_ago=seconds_ago)
    fresh_process()
    before = AgentKey.objects.get(pk=issued.key.pk).last_used_at
    agent_keys_warm()
    marks: list[str] = []
    add = authentication.cache.add
    monkeypatch.setattr(
        authentication.cache, "add", lambda key, *args, **kw: marks.append(key) or add(key, *args, **kw)
    )

    # when: the process's first request with the key
    assert bearer(issued.secret).post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201

    # then: last_used_at is written again only once the minute since the last write is up; within
    # it, not even the cache is asked whether another process wrote it
    assert (AgentKey.objects.get(pk=issued.key.pk).last_used_at != before) is written
    assert (f"toolhub:agent-key-used:{issued.key.pk}" in marks) is written
