"""An end user's own token (per-user credentials) is registered and removed only in that
user's session, and belongs to the agent that registered it: another agent of the tenant
can neither overwrite, delete nor use it.

Found from outside: any agent of a tenant could overwrite, delete or use any subject's
token with no session, and a 201-character or NUL-bearing subject answered 503.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from apps.tenancy.models import Agent, Grant
from apps.tenancy.services import agent_key_issue, session_mint
from apps.upstreams.models import SubjectCredential
from tests.factories import AgentFactory
from tests.gateway.conftest import invoke
from tests.gateway.executors.http.test_http_upstreams import an_upstream, tenant_tool
from tests.http_upstream import Answer, Upstream, http_upstream

pytestmark = pytest.mark.django_db

URL = "/api/v1/credentials/orders-key/subjects/{}"
A_TOKEN = "user-token-of-a-0001"
B_TOKEN = "user-token-of-b-0002"


@pytest.fixture
def api_server() -> Iterator[Upstream]:
    with http_upstream() as running:
        running.answer = lambda received: Answer(body={"order_id": "o-1", "status": "paid"})
        yield running


def client_of(agent: Agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    return client


def session_of(agent: Agent, subject: str) -> str:
    token, _ = session_mint(tenant_id=agent.tenant_id, agent_id=agent.pk, subject=subject, attributes={},
                            ttl_s=900)
    return token


@pytest.fixture
def other_agent(agent) -> Agent:
    """A second agent of the same tenant, granted the same tool."""
    return AgentFactory(tenant=agent.tenant, name="other-bot")


@pytest.fixture
def per_user_tool(agent, other_agent, api_server):
    an_upstream(agent.tenant, api_server.url, per_subject=True)
    version = tenant_tool(agent, upstream="orders-api")
    Grant.objects.create(tenant=agent.tenant, agent=other_agent, tool=version.tool)
    return version


def put(client: APIClient, subject: str, value: str, session: str | None = None):
    headers = {"HTTP_X_TOOLHUB_SESSION": session} if session else {}
    return client.put(URL.format(subject), {"value": value}, format="json", **headers)


def delete(client: APIClient, subject: str, session: str | None = None):
    headers = {"HTTP_X_TOOLHUB_SESSION": session} if session else {}
    return client.delete(URL.format(subject), **headers)


def test_another_agent_cannot_overwrite_delete_or_use_a_users_token(
    agent, other_agent, per_user_tool, api_server
):
    # given agent A registered u-1001's token in u-1001's session
    a, b = client_of(agent), client_of(other_agent)
    assert put(a, "u-1001", A_TOKEN, session_of(agent, "u-1001")).status_code == 204

    # when agent B, with no session, overwrites and deletes it
    overwritten = put(b, "u-1001", B_TOKEN)
    deleted = delete(b, "u-1001")
    # and calls the tool in its own session of u-1001
    used = invoke(b, "order_lookup", {"order_id": "o-1"}, session=session_of(other_agent, "u-1001")).json()

    # then both writes are refused as forbidden, and B's call sent nothing
    for response in (overwritten, deleted):
        assert response.status_code == 403, response.content
        body = response.json()
        assert (body["status"], body["kind"]) == ("error", "forbidden")
        assert "X-ToolHub-Session" in body["message"]
    assert (used["status"], used["kind"]) == ("error", "forbidden")
    assert "connect their account" in used["hint"]
    assert api_server.received == []
    # and u-1001's calls through A still carry A's token
    answered = invoke(a, "order_lookup", {"order_id": "o-1"}, session=session_of(agent, "u-1001"),
                      call_id="call_2").json()
    assert answered["status"] == "ok"
    assert [r.headers["authorization"] for r in api_server.received] == [f"Bearer {A_TOKEN}"]


def test_in_the_users_session_another_agent_registers_and_removes_only_its_own(
    agent, other_agent, per_user_tool, api_server
):
    a, b = client_of(agent), client_of(other_agent)
    put(a, "u-1001", A_TOKEN, session_of(agent, "u-1001"))
    b_session = session_of(other_agent, "u-1001")

    registered = put(b, "u-1001", B_TOKEN, b_session)
    b_call = invoke(b, "order_lookup", {"order_id": "o-1"}, session=b_session).json()
    removed = delete(b, "u-1001", b_session)
    a_call = invoke(a, "order_lookup", {"order_id": "o-1"}, session=session_of(agent, "u-1001"),
                    call_id="call_2").json()

    assert registered.status_code == removed.status_code == 204
    assert b_call["status"] == a_call["status"] == "ok"
    assert [r.headers["authorization"] for r in api_server.received] == [
        f"Bearer {B_TOKEN}", f"Bearer {A_TOKEN}",
    ]
    assert list(SubjectCredential.objects.values_list("agent__name", "subject")) == [("helper", "u-1001")]


def test_a_session_of_another_user_cannot_register_or_remove_their_token(agent, per_user_tool):
    a = client_of(agent)
    put(a, "u-1001", A_TOKEN, session_of(agent, "u-1001"))
    intruder = session_of(agent, "u-2")

    overwritten = put(a, "u-1001", B_TOKEN, intruder)
    deleted = delete(a, "u-1001", intruder)

    for response in (overwritten, deleted):
        assert response.status_code == 403
        assert "session is of another end user" in response.json()["message"]
    stored = SubjectCredential.objects.get()
    assert (stored.subject, stored.last4) == ("u-1001", A_TOKEN[-4:])


@pytest.mark.parametrize(
    ("subject", "problem"),
    [("u" * 201, "at most 200 characters"), ("u-1\x00", "NUL")],
    ids=["201 characters", "NUL"],
)
def test_an_impossible_subject_is_a_400_naming_the_subject(agent, per_user_tool, subject, problem):
    a = client_of(agent)
    session = session_of(agent, "u-1")

    for response in (put(a, subject, A_TOKEN, session), delete(a, subject, session)):
        assert response.status_code == 400, response.content
        body = response.json()
        assert body["kind"] == "invalid_args"
        assert body["details"][0]["path"] == "/subject"
        assert problem in body["details"][0]["problem"]
    assert not SubjectCredential.objects.exists()
