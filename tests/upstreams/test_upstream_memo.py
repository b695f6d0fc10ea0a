"""`upstream_for_call` answers a known upstream from its process's memo, without a query, and
the very next call after any committed change sees it; nobody ever gets another tenant's,
agent's or user's entry."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import transaction

from apps.upstreams import memo
from apps.upstreams.bridge import LAUNCH_HEADER, spec_from_header
from apps.upstreams.errors import CredentialUnreadable, SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import Upstream
from apps.upstreams.selectors import upstream_for_call
from apps.upstreams.services import (
    credential_declare,
    credential_delete_for_subject,
    credential_set,
    credential_set_for_subject,
    launcher_save,
    upstream_delete,
    upstream_save,
)
from tests.factories import (
    AgentFactory,
    CredentialFactory,
    McpLauncherFactory,
    SubjectCredentialFactory,
    UpstreamFactory,
)

pytestmark = pytest.mark.django_db

SECRET = "sk-live-4f9a2b7c1d3e5f60"
NEW_SECRET = "sk-live-0000aaaa1111bbbb"


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Runs a change as its own transaction would: what it announces on commit happens."""

    def run(change, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return change(**kwargs)

    return run


def auth_of(tenant_id, name="orders-api", subject="", agent_id=None):
    return upstream_for_call(tenant_id=tenant_id, name=name, subject=subject, agent_id=agent_id).auth_headers


def test_a_known_upstream_costs_no_query(acme, django_assert_num_queries):
    UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    with django_assert_num_queries(1):
        first = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")

    with django_assert_num_queries(0):
        again = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")

    assert again.auth_headers == first.auth_headers == {"Authorization": f"Bearer {SECRET}"}
    assert again.base_url == "https://orders.example.com/v1"


def test_a_new_value_of_the_credential_is_sent_by_the_next_call(acme, committed):
    UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    before = auth_of(acme.pk)

    committed(credential_set, tenant=acme, name="orders-key", kind="header", field="X-Api-Key",
              value=NEW_SECRET, per_subject=False, actor="test")

    assert before == {"Authorization": f"Bearer {SECRET}"}
    assert auth_of(acme.pk) == {"X-Api-Key": NEW_SECRET}


def test_a_credential_declared_anew_is_used_by_the_next_call(acme, committed):
    UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    auth_of(acme.pk)

    committed(credential_declare, tenant=acme, name="orders-key", kind="query", field="api_key", actor="test")

    moved = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    assert (moved.auth_headers, moved.auth_query) == ({}, {"api_key": SECRET})


def test_a_changed_or_deleted_upstream_is_seen_by_the_next_call(acme, committed):
    upstream = UpstreamFactory(orders=True, tenant=acme)
    upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")

    upstream.base_url = "https://orders.example.com/v2"
    committed(upstream_save, upstream=upstream, actor="test")
    moved = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    upstream.credential = None
    committed(upstream_save, upstream=upstream, actor="test")
    unkeyed = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    committed(upstream_delete, upstream=Upstream.objects.get(), actor="test")

    assert moved.base_url == "https://orders.example.com/v2"
    assert unkeyed.auth_headers == {}
    with pytest.raises(UpstreamNotFound):
        upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")


def test_a_change_of_another_process_is_seen_through_the_shared_generation(acme):
    # given: this process has the upstream in its memo; another process commits a new base URL
    UpstreamFactory(orders=True, tenant=acme)
    upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    Upstream.objects.update(base_url="https://orders.example.com/v3")
    served_before_the_announcement = upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")

    # when: its commit announces the change (the cache is all processes share)
    cache.incr(memo.UPSTREAM_GENERATION_KEY)

    # then
    assert served_before_the_announcement.base_url == "https://orders.example.com/v1"
    assert upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="").base_url == (
        "https://orders.example.com/v3"
    )


def test_a_lost_generation_drops_the_memo(acme):
    UpstreamFactory(orders=True, tenant=acme)
    upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    Upstream.objects.update(base_url="https://orders.example.com/v3")

    cache.clear()  # a flush, or the key evicted

    assert upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="").base_url == (
        "https://orders.example.com/v3"
    )


def test_a_change_rolled_back_announces_nothing(acme, django_capture_on_commit_callbacks):
    upstream = UpstreamFactory(orders=True, tenant=acme)
    upstream_for_call(tenant_id=acme.pk, name="orders-api", subject="")
    generation = cache.get(memo.UPSTREAM_GENERATION_KEY)

    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        upstream.base_url = "https://orders.example.com/v2"
        upstream_save(upstream=upstream, actor="test")
        transaction.set_rollback(True)

    assert cache.get(memo.UPSTREAM_GENERATION_KEY) == generation
    assert not callbacks


def test_a_tenant_never_gets_another_tenants_upstream_of_the_same_name(acme, globex):
    UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    acme_auth = auth_of(acme.pk)

    with pytest.raises(UpstreamNotFound):
        upstream_for_call(tenant_id=globex.pk, name="orders-api", subject="")
    with pytest.raises(UpstreamNotFound):
        upstream_for_call(tenant_id=None, name="orders-api", subject="")
    UpstreamFactory(orders=True, tenant=globex, credential__value=NEW_SECRET)

    assert acme_auth == auth_of(acme.pk) == {"Authorization": f"Bearer {SECRET}"}
    assert auth_of(globex.pk) == {"Authorization": f"Bearer {NEW_SECRET}"}


def test_an_end_users_token_is_sent_only_for_them_and_its_replacement_or_removal_at_once(
    acme, committed, django_assert_num_queries
):
    credential = CredentialFactory(tenant=acme, name="crm", per_subject=True)
    UpstreamFactory(tenant=acme, name="orders-api", credential=credential)
    agent, other_agent = AgentFactory(tenant=acme, name="bot"), AgentFactory(tenant=acme, name="other-bot")
    SubjectCredentialFactory(credential=credential, agent=agent, subject="u-1", value="token-of-u-1-aaa")
    SubjectCredentialFactory(credential=credential, agent=agent, subject="u-2", value="token-of-u-2-bbb")
    first = auth_of(acme.pk, subject="u-1", agent_id=agent.pk)
    with django_assert_num_queries(0):
        again = auth_of(acme.pk, subject="u-1", agent_id=agent.pk)

    other_user = auth_of(acme.pk, subject="u-2", agent_id=agent.pk)
    with pytest.raises(SubjectCredentialMissing):
        auth_of(acme.pk, subject="u-1", agent_id=other_agent.pk)
    committed(credential_set_for_subject, credential=credential, agent_id=agent.pk, subject="u-1",
              value="token-of-u-1-ccc", actor="test")
    replaced = auth_of(acme.pk, subject="u-1", agent_id=agent.pk)
    committed(credential_delete_for_subject, credential=credential, agent_id=agent.pk, subject="u-1",
              actor="test")

    assert first == again == {"Authorization": "Bearer token-of-u-1-aaa"}
    assert other_user == {"Authorization": "Bearer token-of-u-2-bbb"}
    assert replaced == {"Authorization": "Bearer token-of-u-1-ccc"}
    with pytest.raises(SubjectCredentialMissing):
        auth_of(acme.pk, subject="u-1", agent_id=agent.pk)


def test_a_token_registered_after_a_refusal_is_used_by_the_next_call(acme, committed):
    credential = CredentialFactory(tenant=acme, name="crm", per_subject=True)
    UpstreamFactory(tenant=acme, name="orders-api", credential=credential)
    agent = AgentFactory(tenant=acme, name="bot")
    with pytest.raises(SubjectCredentialMissing):
        auth_of(acme.pk, subject="u-1", agent_id=agent.pk)

    committed(credential_set_for_subject, credential=credential, agent_id=agent.pk, subject="u-1",
              value="token-of-u-1-aaa", actor="test")

    assert auth_of(acme.pk, subject="u-1", agent_id=agent.pk) == {"Authorization": "Bearer token-of-u-1-aaa"}


def test_a_changed_launcher_is_what_the_next_call_asks_the_bridge_to_run(acme, committed):
    launcher = McpLauncherFactory(name="time")
    UpstreamFactory(mcp=True, tenant=acme, name="clock", base_url="", launcher=launcher)
    before = spec_from_header(auth_of(acme.pk, name="clock")[LAUNCH_HEADER])

    launcher.memory_mb = 256
    committed(launcher_save, launcher=launcher, actor="test")

    assert before["memory_mb"] == 1024
    assert spec_from_header(auth_of(acme.pk, name="clock")[LAUNCH_HEADER])["memory_mb"] == 256


def test_without_the_key_its_values_were_read_with_the_next_call_is_refused(acme, settings, fernet_keys):
    old, new, _ = fernet_keys
    settings.TOOLHUB_ENCRYPTION_KEYS = [old]
    UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    auth_of(acme.pk)

    settings.TOOLHUB_ENCRYPTION_KEYS = [new]

    with pytest.raises(CredentialUnreadable):
        auth_of(acme.pk)


def test_past_its_limit_the_memo_forgets_the_oldest_entry_first(acme, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(memo, "MEMO_LIMIT", 2)
    for name in ("a-api", "b-api", "c-api"):
        UpstreamFactory(tenant=acme, name=name)
        upstream_for_call(tenant_id=acme.pk, name=name, subject="")

    with django_assert_num_queries(0):
        upstream_for_call(tenant_id=acme.pk, name="c-api", subject="")
        upstream_for_call(tenant_id=acme.pk, name="b-api", subject="")
    with django_assert_num_queries(1):
        upstream_for_call(tenant_id=acme.pk, name="a-api", subject="")
