"""Agent keys: hashed at rest, shown once, refused as soon as they are revoked."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from apps.audit.models import AuditEvent
from apps.tenancy.models import AgentKey
from apps.tenancy.services import agent_key_revoke, agent_save, tenant_save

from .conftest import bearer, rows_containing

pytestmark = pytest.mark.django_db

SESSIONS = "/api/v1/sessions"


def test_only_the_prefix_and_a_sha256_digest_are_stored(issued):
    # given a freshly issued key
    stored = AgentKey.objects.get(pk=issued.key.pk)

    # then the row holds its lookup prefix and the SHA-256 of the full key, nothing more
    assert issued.secret.startswith(f"thk_{stored.prefix}_")
    assert stored.digest == hashlib.sha256(issued.secret.encode()).hexdigest()
    # and the full key (nor its secret part) appears nowhere in the database
    assert rows_containing(issued.secret) == {}
    assert rows_containing(issued.secret.split("_", 2)[2]) == {}  # thk_<prefix>_<secret>


def test_an_issued_key_authenticates_and_marks_itself_used(issued):
    assert AgentKey.objects.get(pk=issued.key.pk).last_used_at is None

    response = bearer(issued.secret).post(SESSIONS, {"subject": "u-1"}, format="json")

    assert response.status_code == 201
    assert AgentKey.objects.get(pk=issued.key.pk).last_used_at is not None


def test_the_auth_scheme_is_case_insensitive(issued):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"bearer {issued.secret}")

    assert client.post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201


def _assert_refused(response, message_part: str) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="toolhub"'
    body = response.json()
    assert body["status"] == "error"
    assert body["kind"] == "forbidden"
    assert body["recoverable"] is False
    assert message_part in body["message"]
    assert "issue_agent_key" in body["hint"]


def test_a_wrong_secret_with_a_valid_prefix_is_refused(issued):
    forged = f"thk_{issued.key.prefix}_{'x' * 43}"

    response = bearer(forged).post(SESSIONS, {"subject": "u-1"}, format="json")

    _assert_refused(response, "unknown or revoked")
    assert AgentKey.objects.get(pk=issued.key.pk).last_used_at is None


@pytest.mark.parametrize(
    "header",
    # A character no HTTP header can carry (a test client or an ASGI server may pass one on).
    ["Bearer", "Token abc", "Bearer not-a-toolhub-key", "Basic dXNlcjpwYXNz", "Bearer thk_€"],
)
def test_malformed_authorization_is_refused(client, header):
    response = client.post(SESSIONS, {"subject": "u-1"}, content_type="application/json",
                           HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response.json()["kind"] == "forbidden"


def test_a_missing_key_is_refused_with_an_envelope(client):
    response = client.post(SESSIONS, {"subject": "u-1"}, content_type="application/json")

    _assert_refused(response, "credentials were not provided")


def test_a_revoked_key_is_refused_at_once_even_when_cached(issued, django_capture_on_commit_callbacks):
    # given a key that was just used, so its lookup is cached
    client = bearer(issued.secret)
    assert client.post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201

    # when it is revoked
    with django_capture_on_commit_callbacks(execute=True):
        agent_key_revoke(key=issued.key, actor="test", note="leaked in a log")

    # then the very next request is refused
    _assert_refused(client.post(SESSIONS, {"subject": "u-1"}, format="json"), "unknown or revoked")
    event = AuditEvent.objects.get(action="agent_key.revoke")
    assert (event.actor, event.note, event.target_id) == ("test", "leaked in a log", str(issued.key.pk))


def test_revoking_twice_keeps_the_first_revocation(issued):
    first = agent_key_revoke(key=issued.key, actor="test").revoked_at

    again = agent_key_revoke(key=issued.key, actor="test")

    assert again.revoked_at == first
    assert AuditEvent.objects.filter(action="agent_key.revoke").count() == 1


def test_deactivating_the_agent_refuses_its_cached_keys(issued, agent, django_capture_on_commit_callbacks):
    client = bearer(issued.secret)
    assert client.post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201

    agent.active = False
    with django_capture_on_commit_callbacks(execute=True):
        agent_save(agent=agent, actor="test")

    _assert_refused(client.post(SESSIONS, {"subject": "u-1"}, format="json"), "unknown or revoked")

    # and reactivating it lets the same key in again
    agent.active = True
    with django_capture_on_commit_callbacks(execute=True):
        agent_save(agent=agent, actor="test")
    assert client.post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201


def test_deactivating_the_tenant_refuses_its_cached_keys(issued, agent, django_capture_on_commit_callbacks):
    client = bearer(issued.secret)
    assert client.post(SESSIONS, {"subject": "u-1"}, format="json").status_code == 201

    agent.tenant.active = False
    with django_capture_on_commit_callbacks(execute=True):
        tenant_save(tenant=agent.tenant, actor="test")

    _assert_refused(client.post(SESSIONS, {"subject": "u-1"}, format="json"), "unknown or revoked")
