"""PUT/DELETE /api/v1/credentials/{name}/subjects/{subject}: an agent's backend registers its
users' own tokens for its tenant's per-user credentials; the value is never answered."""

from __future__ import annotations

import pytest

from apps.audit.models import AuditEvent
from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint
from apps.upstreams.errors import SubjectCredentialMissing
from apps.upstreams.models import SubjectCredential
from apps.upstreams.selectors import upstream_for_call
from tests.factories import CredentialFactory, UpstreamFactory
from tests.fuzz.hostile import BODIES, VALUES, embed

pytestmark = pytest.mark.django_db

TOKEN = "user-token-5e6f7a8b9c0d"
URL = "/api/v1/credentials/{}/subjects/{}"


def in_session(tenant, subject: str) -> dict[str, str]:
    """The session header of `subject` for the tenant's agent (the one `agent_api` made)."""
    bot = Agent.objects.get(tenant=tenant, name=f"{tenant.slug}-bot")
    token, _ = session_mint(tenant_id=tenant.pk, agent_id=bot.pk, subject=subject, attributes={}, ttl_s=900)
    return {"HTTP_X_TOOLHUB_SESSION": token}


def _per_user(tenant, name: str = "crm") -> None:
    """The tenant's upstream `{name}-api`, whose credential `name` is each end user's own token."""
    UpstreamFactory(keyed=True, tenant=tenant, name=f"{name}-api", base_url="https://crm.example",
                    credential__name=name, credential__per_subject=True)


def test_a_registered_token_is_used_for_that_users_calls_and_never_answered(acme, acme_api):
    _per_user(acme)

    session = in_session(acme, "u-1001")
    put = acme_api.put(URL.format("crm", "u-1001"), {"value": TOKEN}, format="json", **session)
    replaced = acme_api.put(URL.format("crm", "u-1001"), {"value": TOKEN + "-2"}, format="json", **session)

    assert put.status_code == replaced.status_code == 204 and put.content == b""
    bot = Agent.objects.get(tenant=acme, name="acme-bot")
    resolved = upstream_for_call(tenant_id=acme.pk, name="crm-api", subject="u-1001", agent_id=bot.pk)
    assert resolved.auth_headers == {"Authorization": f"Bearer {TOKEN}-2"}
    assert list(AuditEvent.objects.filter(tenant=acme, action__startswith="credential.subject")
                .order_by("at").values_list("action", "data")) == [
        ("credential.subject_set", {"name": "crm", "subject": "u-1001"}),
        ("credential.subject_replace", {"name": "crm", "subject": "u-1001"}),
    ]


def test_delete_forgets_the_token(acme, acme_api):
    _per_user(acme)
    session = in_session(acme, "u-1001")
    acme_api.put(URL.format("crm", "u-1001"), {"value": TOKEN}, format="json", **session)

    deleted = acme_api.delete(URL.format("crm", "u-1001"), **session)
    again = acme_api.delete(URL.format("crm", "u-1001"), **session)

    assert deleted.status_code == again.status_code == 204
    bot = Agent.objects.get(tenant=acme, name="acme-bot")
    with pytest.raises(SubjectCredentialMissing):
        upstream_for_call(tenant_id=acme.pk, name="crm-api", subject="u-1001", agent_id=bot.pk)
    assert AuditEvent.objects.filter(action="credential.subject_delete").count() == 1


def test_another_tenants_credential_is_not_found_and_untouched(acme, globex, acme_api):
    _per_user(globex, "globex-crm")

    put = acme_api.put(URL.format("globex-crm", "u-1"), {"value": TOKEN}, format="json")
    delete = acme_api.delete(URL.format("globex-crm", "u-1"))
    unknown = acme_api.put(URL.format("nope", "u-1"), {"value": TOKEN}, format="json")

    for response in (put, delete, unknown):
        assert response.status_code == 404
        body = response.json()
        assert (body["status"], body["kind"]) == ("error", "not_found")
        assert TOKEN not in response.content.decode()
    assert not SubjectCredential.objects.exists()


def test_a_platform_credential_is_not_the_tenants(acme, acme_api):
    CredentialFactory(tenant=None, name="platform-key", value="platform-secret-123")

    response = acme_api.put(URL.format("platform-key", "u-1"), {"value": TOKEN}, format="json")

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"value": "line\nbreak" + TOKEN}, "/value"),
        ({"value": ""}, "/value"),
        ({}, "/value"),
        ({"value": TOKEN, "subject": "u-2"}, "/subject"),
    ],
)
def test_a_malformed_body_is_refused_without_echoing_the_value(acme, acme_api, body, path):
    _per_user(acme)

    response = acme_api.put(URL.format("crm", "u-1"), body, format="json", **in_session(acme, "u-1"))

    assert response.status_code == 400 and response.json()["kind"] == "invalid_args"
    assert [d["path"] for d in response.json()["details"]] == [path]
    assert TOKEN not in response.content.decode()
    assert not SubjectCredential.objects.exists()


def test_a_credential_with_one_value_for_everyone_takes_no_users_tokens(acme, acme_api):
    CredentialFactory(tenant=acme, name="orders-key", value="shared-secret-1234")

    response = acme_api.put(URL.format("orders-key", "u-1"), {"value": TOKEN}, format="json",
                            **in_session(acme, "u-1"))

    assert response.status_code == 400 and "not per end user" in response.json()["details"][0]["problem"]
    assert not SubjectCredential.objects.exists()


def test_without_an_agent_key_nothing_is_stored(acme, client):
    _per_user(acme)

    response = client.put(URL.format("crm", "u-1"), {"value": TOKEN}, content_type="application/json")

    assert response.status_code == 401 and not SubjectCredential.objects.exists()


@pytest.mark.parametrize("name", [*BODIES, *(f"value: {v}" for v in VALUES)])
def test_a_hostile_body_is_refused_with_an_envelope_and_stores_nothing(acme, acme_api, name):
    _per_user(acme)
    raw = BODIES[name] if name in BODIES else embed({"value": "x"}, ("value",), VALUES[name[7:]])

    response = acme_api.generic("PUT", URL.format("crm", "u-1"), raw, content_type="application/json",
                                **in_session(acme, "u-1"))

    assert 400 <= response.status_code < 500, (response.status_code, response.content[:200])
    body = response.json()
    assert body["status"] == "error" and body["message"] and body["hint"]
    assert not SubjectCredential.objects.exists()


def test_the_schema_documents_the_endpoint_without_a_value_in_any_answer(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operations = schema["paths"]["/api/v1/credentials/{name}/subjects/{subject}"]
    assert set(operations["put"]["responses"]) == {
        "204", "400", "401", "403", "404", "409", "413", "415", "503"
    }
    assert set(operations["delete"]["responses"]) == {"204", "400", "401", "403", "404", "503"}
    for method in ("put", "delete"):
        header = next(p for p in operations[method]["parameters"] if p["name"] == "X-ToolHub-Session")
        assert (header["in"], header["required"]) == ("header", True)
    assert "content" not in operations["put"]["responses"]["204"]
    body = operations["put"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    assert schema["components"]["schemas"][body]["required"] == ["value"]


def test_a_credential_holds_at_most_the_configured_number_of_users_tokens(acme, acme_api, settings):
    # given: a per-user credential that may hold 3 users' tokens, and 3 registered
    settings.TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL = 3
    _per_user(acme)
    def register(subject: str, value: str):
        return acme_api.put(URL.format("crm", subject), {"value": value}, format="json",
                            **in_session(acme, subject))

    for n in range(3):
        assert register(f"u-{n}", TOKEN).status_code == 204

    # when: a fourth user registers, and one of the three replaces their token
    refused = register("u-3", TOKEN)
    replaced = register("u-0", TOKEN + "-2")

    # then: the fourth is refused, naming the limit and what to do; the replacement is not
    assert refused.status_code == 409
    body = refused.json()
    assert (body["status"], body["kind"]) == ("error", "business_rule")
    assert "3" in body["message"] and "TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL" in body["hint"]
    assert TOKEN not in refused.content.decode()
    assert replaced.status_code == 204
    assert sorted(SubjectCredential.objects.values_list("subject", flat=True)) == ["u-0", "u-1", "u-2"]
    assert not AuditEvent.objects.filter(data__subject="u-3").exists()
