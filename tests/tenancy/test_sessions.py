"""Session tokens: minted by the agent's backend, valid only for that agent and until expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.common.errors import ForbiddenError
from apps.tenancy.services import session_mint
from apps.tenancy.sessions import verify_session
from tests.factories import AgentFactory

from .conftest import bearer

pytestmark = pytest.mark.django_db

SESSIONS = "/api/v1/sessions"


def test_a_minted_token_verifies_for_the_agent_that_minted_it(issued, agent):
    before = timezone.now()

    response = bearer(issued.secret).post(
        SESSIONS, {"subject": "u-1001", "attributes": {"plan": "pro"}, "ttl_s": 600}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"token", "expires_at"}
    expires_at = datetime.fromisoformat(body["expires_at"])
    assert expires_at.tzinfo is not None
    assert before + timedelta(seconds=599) <= expires_at <= timezone.now() + timedelta(seconds=600)
    claims = verify_session(body["token"], tenant_id=agent.tenant_id, agent_id=agent.pk, now=timezone.now())
    assert claims is not None
    assert (claims.tenant_id, claims.agent_id, claims.subject) == (agent.tenant_id, agent.pk, "u-1001")
    assert claims.attributes == {"plan": "pro"}
    assert claims.expires_at == expires_at


def test_ttl_defaults_to_fifteen_minutes(issued):
    response = bearer(issued.secret).post(SESSIONS, {"subject": "u-1"}, format="json")

    expires_at = datetime.fromisoformat(response.json()["expires_at"])
    assert timedelta(seconds=895) < expires_at - timezone.now() <= timedelta(seconds=900)


def test_a_token_expires():
    token, expires_at = session_mint(tenant_id=1, agent_id=2, subject="u-1", attributes={}, ttl_s=60)

    assert verify_session(token, tenant_id=1, agent_id=2, now=expires_at - timedelta(seconds=1))
    with pytest.raises(ForbiddenError, match="expired"):
        verify_session(token, tenant_id=1, agent_id=2, now=expires_at)


def test_a_token_with_one_character_changed_is_forbidden():
    token, _ = session_mint(tenant_id=1, agent_id=2, subject="u-1", attributes={}, ttl_s=60)
    middle = len(token) // 2
    tampered = token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1:]

    with pytest.raises(ForbiddenError, match="not valid") as refused:
        verify_session(tampered, tenant_id=1, agent_id=2, now=timezone.now())
    assert refused.value.kind == "forbidden"
    assert "POST /api/v1/sessions" in refused.value.hint


@pytest.mark.parametrize("tenant_id, agent_id", [(9, 2), (1, 9)], ids=["other tenant", "other agent"])
def test_a_token_of_another_tenant_or_agent_is_forbidden(tenant_id, agent_id):
    token, _ = session_mint(tenant_id=1, agent_id=2, subject="u-1", attributes={}, ttl_s=60)

    with pytest.raises(ForbiddenError, match="another agent"):
        verify_session(token, tenant_id=tenant_id, agent_id=agent_id, now=timezone.now())


def test_a_token_minted_by_another_agent_is_forbidden_in_a_request(agent):
    other = AgentFactory(tenant=agent.tenant)
    token, _ = session_mint(tenant_id=agent.tenant_id, agent_id=other.pk, subject="u-1", attributes={},
                            ttl_s=60)

    with pytest.raises(ForbiddenError):
        verify_session(token, tenant_id=agent.tenant_id, agent_id=agent.pk, now=timezone.now())


def test_expires_at_is_what_the_token_keeps():
    now = datetime(2026, 1, 1, 12, 0, 0, 987654, tzinfo=UTC)

    token, expires_at = session_mint(tenant_id=1, agent_id=2, subject="u", attributes={}, ttl_s=10, now=now)

    assert expires_at == datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC)
    assert verify_session(token, tenant_id=1, agent_id=2, now=now).expires_at == expires_at


def _problems(response) -> dict[str, str]:
    body = response.json()
    assert response.status_code == 400
    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "invalid_args", True)
    return {d["path"]: d["problem"] for d in body["details"]}


@pytest.mark.parametrize("ttl_s", [0, -5, 86_401, "soon", 1.5])
def test_ttl_out_of_bounds_answers_an_error_envelope(issued, ttl_s):
    response = bearer(issued.secret).post(SESSIONS, {"subject": "u-1", "ttl_s": ttl_s}, format="json")

    assert "/ttl_s" in _problems(response)


def test_ttl_bounds_follow_the_setting(issued, settings):
    settings.TOOLHUB_SESSION_MAX_TTL_S = 300
    client = bearer(issued.secret)

    too_long = client.post(SESSIONS, {"subject": "u-1", "ttl_s": 301}, format="json")
    at_limit = client.post(SESSIONS, {"subject": "u-1", "ttl_s": 300}, format="json")
    default = client.post(SESSIONS, {"subject": "u-1"}, format="json")

    assert "less than or equal to 300" in _problems(too_long)["/ttl_s"]
    assert at_limit.status_code == 201
    assert datetime.fromisoformat(default.json()["expires_at"]) - timezone.now() <= timedelta(seconds=300)


@pytest.mark.parametrize(
    "body, path",
    [
        ({}, "/subject"),
        ({"subject": "  "}, "/subject"),
        ({"subject": "u-1", "attributes": ["plan"]}, "/attributes"),
        ({"subject": "u-1", "attributes": {"bad name": 1}}, "/attributes"),
        ({"subject": "u-1", "attributes": {"blob": "x" * 5000}}, "/attributes"),
        ({"subject": "u-1", "ttl": 60}, "/ttl"),
    ],
    ids=["missing subject", "blank subject", "attributes not an object", "bad attribute name",
         "attributes too long", "unknown field"],
)
def test_bad_bodies_answer_an_error_envelope_naming_the_field(issued, body, path):
    response = bearer(issued.secret).post(SESSIONS, body, format="json")

    assert path in _problems(response)


def test_a_body_that_is_not_json_answers_invalid_json(issued):
    response = bearer(issued.secret).post(SESSIONS, "{subject:", content_type="application/json")

    assert response.status_code == 400
    assert response.json()["kind"] == "invalid_json"


def test_the_openapi_schema_documents_the_endpoint(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operation = schema["paths"]["/api/v1/sessions"]["post"]
    assert set(operation["responses"]) == {"201", "400", "401", "413", "415", "503"}
    assert operation["security"] == [{"agentKey": []}]
    created = operation["responses"]["201"]["content"]["application/json"]["schema"]["$ref"]
    error = operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    assert set(components[created.rsplit("/", 1)[1]]["properties"]) == {"token", "expires_at"}
    assert {"kind", "recoverable", "message", "hint", "details"} <= set(
        components[error.rsplit("/", 1)[1]]["properties"]
    )
    assert schema["components"]["securitySchemes"]["agentKey"]["scheme"] == "bearer"
