"""Credentials are encrypted at rest, rotate to the newest key, and reach an executor only
through `upstream_for_call`, as the auth of their kind."""

from __future__ import annotations

import base64
import io

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.upstreams.errors import CredentialUnreadable, SubjectCredentialMissing, UpstreamNotFound
from apps.upstreams.models import Credential, SubjectCredential, Upstream
from apps.upstreams.selectors import upstream_for_call
from apps.upstreams.services import credential_delete_for_subject, credentials_rotate
from tests.factories import AgentFactory, CredentialFactory, SubjectCredentialFactory, UpstreamFactory

pytestmark = pytest.mark.django_db

SECRET = "sk-live-4f9a2b7c1d3e5f60"


def test_a_value_is_stored_only_as_a_token_that_decrypts_to_it(acme):
    credential = CredentialFactory(tenant=acme, name="orders-key", value=SECRET)

    stored = Credential.objects.get(pk=credential.pk)
    assert SECRET not in stored.ciphertext
    # A Fernet token: version byte 0x80 once decoded.
    assert base64.urlsafe_b64decode(stored.ciphertext)[0] == 0x80
    assert stored.last4 == SECRET[-4:]
    upstream = UpstreamFactory(tenant=acme, name="orders-api", credential=stored)
    resolved = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="")
    assert resolved.auth_headers == {"Authorization": f"Bearer {SECRET}"}


def test_a_short_value_shows_no_last_characters(acme):
    assert CredentialFactory(tenant=acme, value="abcd1234").last4 == ""


def test_rotation_moves_every_value_to_the_newest_key(acme, settings, fernet_keys):
    old, new, _ = fernet_keys
    settings.TOOLHUB_ENCRYPTION_KEYS = [old]
    credential = CredentialFactory(tenant=acme, name="crm", kind="bearer", per_subject=True)
    CredentialFactory(tenant=acme, name="orders-key", value=SECRET)
    SubjectCredentialFactory(credential=credential, agent=AgentFactory(tenant=acme), subject="u-1",
                             value="user-token-0001")
    upstream = UpstreamFactory(tenant=acme, name="orders-api",
                               credential=Credential.objects.get(name="orders-key"))

    # A new key first: what the old one encrypted still decrypts, before any rotation.
    settings.TOOLHUB_ENCRYPTION_KEYS = [new, old]
    before = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="")
    rotated = credentials_rotate(actor="test")
    # Only the newest key left: everything reads.
    settings.TOOLHUB_ENCRYPTION_KEYS = [new]
    after = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="")

    assert before.auth_headers == after.auth_headers == {"Authorization": f"Bearer {SECRET}"}
    assert rotated == 2
    for token in [*Credential.objects.exclude(ciphertext="").values_list("ciphertext", flat=True),
                  *SubjectCredential.objects.values_list("ciphertext", flat=True)]:
        Fernet(new).decrypt(token.encode())
        with pytest.raises(InvalidToken):
            Fernet(old).decrypt(token.encode())
    assert AuditEvent.objects.filter(action="credential.rotate").count() == 2


def test_without_the_old_key_a_call_is_refused_unavailable_and_rotation_changes_nothing(
    acme, settings, fernet_keys, caplog
):
    old, new, _ = fernet_keys
    settings.TOOLHUB_ENCRYPTION_KEYS = [old]
    upstream = UpstreamFactory(orders=True, tenant=acme, credential__value=SECRET)
    stored = Credential.objects.get().ciphertext
    settings.TOOLHUB_ENCRYPTION_KEYS = [new]

    with pytest.raises(CredentialUnreadable) as refused:
        upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="")
    with pytest.raises(CommandError, match="readable by none of the keys"):
        call_command("rotate_credentials")

    assert refused.value.kind == "unavailable" and isinstance(refused.value, UpstreamNotFound)
    assert "orders-key" in caplog.text and SECRET not in caplog.text
    assert Credential.objects.get().ciphertext == stored


def test_rotate_credentials_says_how_many_values_it_reencrypted(acme, settings, fernet_keys):
    old, new, _ = fernet_keys
    settings.TOOLHUB_ENCRYPTION_KEYS = [old]
    CredentialFactory(tenant=acme, name="orders-key", value=SECRET)
    settings.TOOLHUB_ENCRYPTION_KEYS = [new, old]
    out = io.StringIO()

    call_command("rotate_credentials", stdout=out)

    assert "Re-encrypted 1 credential value(s)" in out.getvalue()


@pytest.mark.parametrize(
    ("kind", "field", "value", "headers", "query"),
    [
        ("bearer", "", "tok-123456789", {"Authorization": "Bearer tok-123456789"}, {}),
        ("basic", "", "ann:pa:ss", {"Authorization": "Basic " + base64.b64encode(b"ann:pa:ss").decode()}, {}),
        ("header", "X-Api-Key", "key-123456789", {"X-Api-Key": "key-123456789"}, {}),
        ("query", "api_key", "key-123456789", {}, {"api_key": "key-123456789"}),
    ],
)
def test_each_kind_becomes_its_auth(acme, kind, field, value, headers, query):
    upstream = UpstreamFactory(orders=True, tenant=acme, credential__kind=kind, credential__field=field,
                               credential__value=value)

    resolved = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="u-1")

    assert (resolved.auth_headers, resolved.auth_query) == (headers, query)
    assert (resolved.base_url, resolved.kind, resolved.timeout_s) == (
        "https://orders.example.com/v1", "http", 10.0
    )
    assert value not in repr(resolved)


@pytest.mark.parametrize(
    ("kind", "field", "value", "problem"),
    [
        ("header", "", SECRET, "needs the header name"),
        ("header", "X Bad", SECRET, "Not a valid HTTP header name"),
        ("bearer", "X-Key", SECRET, "has no field"),
        ("basic", "", "no-colon-here", "user:password"),
        ("bearer", "", "line\r\nX-Injected: 1", "printable ASCII"),
        ("bearer", "", "", "empty"),
    ],
)
def test_a_credential_that_cannot_work_is_refused_without_quoting_it(acme, kind, field, value, problem):
    with pytest.raises(ValidationError, match=problem) as refused:
        CredentialFactory(tenant=acme, name="orders-key", kind=kind, field=field, value=value)

    assert not Credential.objects.exists()
    assert not value or value not in str(refused.value)


def test_a_per_user_credential_uses_the_sessions_own_token_registered_by_the_calling_agent(
    acme, django_capture_on_commit_callbacks
):
    credential = CredentialFactory(tenant=acme, name="crm", per_subject=True)
    upstream = UpstreamFactory(tenant=acme, name="orders-api", credential=credential)
    agent, other_agent = AgentFactory(tenant=acme, name="bot"), AgentFactory(tenant=acme, name="other-bot")
    SubjectCredentialFactory(credential=credential, agent=agent, subject="u-1", value="token-of-u-1-xyz")

    own = upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="u-1", agent_id=agent.pk)
    with pytest.raises(SubjectCredentialMissing) as other:
        upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="u-2", agent_id=agent.pk)
    with pytest.raises(SubjectCredentialMissing):
        upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="u-1", agent_id=other_agent.pk)
    with pytest.raises(SubjectCredentialMissing):
        upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="", agent_id=agent.pk)
    assert not credential_delete_for_subject(credential=credential, agent_id=other_agent.pk, subject="u-1",
                                             actor="test")
    with django_capture_on_commit_callbacks(execute=True):
        credential_delete_for_subject(credential=credential, agent_id=agent.pk, subject="u-1", actor="test")
    with pytest.raises(SubjectCredentialMissing):
        upstream_for_call(tenant_id=acme.pk, name=upstream.name, subject="u-1", agent_id=agent.pk)

    assert own.auth_headers == {"Authorization": "Bearer token-of-u-1-xyz"}
    assert other.value.kind == "forbidden" and other.value.credential_name == "crm"
    assert "connect their account" in other.value.hint


def test_a_tenant_uses_its_own_upstreams_and_the_platforms_never_another_tenants(acme, globex):
    UpstreamFactory(tenant=globex, name="globex-api")
    platform = UpstreamFactory(keyed=True, tenant=None, name="payments", credential__name="platform-key",
                               credential__value=SECRET)

    with pytest.raises(UpstreamNotFound) as foreign:
        upstream_for_call(tenant_id=acme.pk, name="globex-api", subject="")
    shared = upstream_for_call(tenant_id=acme.pk, name=platform.name, subject="")

    assert foreign.value.kind == "unavailable" and "globex" not in foreign.value.message
    assert shared.auth_headers == {"Authorization": f"Bearer {SECRET}"}


def test_an_upstream_takes_only_a_credential_of_its_own_owner(acme, globex):
    platform_key = CredentialFactory(tenant=None, name="platform-key", value=SECRET)
    globex_key = CredentialFactory(tenant=globex, name="globex-key", value=SECRET)

    for credential in (platform_key, globex_key):
        with pytest.raises(ValidationError, match="credential of the upstream's own owner"):
            UpstreamFactory(tenant=acme, name="orders-api", credential=credential)
    assert not Upstream.objects.exists()


def test_names_are_unique_per_owner_and_a_tenants_never_shadows_the_platforms(acme, globex):
    UpstreamFactory(tenant=None, name="payments")
    UpstreamFactory(tenant=globex, name="orders-api")

    UpstreamFactory(tenant=acme, name="orders-api")  # another tenant's name is free
    with pytest.raises(ValidationError, match="platform already has an upstream named payments"):
        UpstreamFactory(tenant=acme, name="payments")
    with pytest.raises(ValidationError, match="would shadow it"):
        UpstreamFactory(tenant=None, name="orders-api")
    with pytest.raises(ValidationError, match="already has one of that name"):
        UpstreamFactory(tenant=acme, name="orders-api")


def test_a_platform_credential_cannot_be_per_user(db):
    with pytest.raises(ValidationError, match="Only a tenant's credential can be per end user"):
        CredentialFactory(tenant=None, name="orders-key", per_subject=True)
