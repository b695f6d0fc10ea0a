"""A tenant's tool calls its API through a named upstream: the base URL and the credential
come from the upstream (decrypted only to send), never from the tool's arguments or answer."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from django.utils import timezone

from apps.audit.models import Invocation
from apps.catalog.models import Tool, ToolVersion
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.models import Grant
from tests.factories import TenantFactory, UpstreamFactory
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Received, Upstream, http_upstream

pytestmark = pytest.mark.django_db

SECRET = "sk-live-4f1c9a7e-upstream-secret"
PARAMETERS = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "description": "The order."}},
    "required": ["order_id"],
    "additionalProperties": False,
}


@pytest.fixture
def api_server() -> Iterator[Upstream]:
    with http_upstream() as running:
        running.answer = lambda received: Answer(body={"order_id": "o-1", "status": "paid"})
        yield running


def tenant_tool(agent, *, upstream: str, side_effect: str = "readonly") -> ToolVersion:
    """A tool of the agent's own tenant, published and granted, calling `upstream`."""
    tool = Tool.objects.create(name="order_lookup", tenant=agent.tenant)
    version = ToolVersion.objects.create(
        tool=tool, number=1, description="Looks one order up by id. Not for changing anything.",
        parameters=PARAMETERS, side_effect=side_effect, executor="http", timeout_s=2.0,
        executor_config={"upstream": upstream, "method": "GET", "path": "/orders/{order_id}"},
    )
    version.status, version.published_at = "published", timezone.now()
    version.save()
    Grant.objects.create(tenant=agent.tenant, agent=agent, tool=tool)
    return version


@pytest.mark.parametrize(
    ("kind", "field", "arrives"),
    [("bearer", "", "authorization"), ("header", "X-Api-Key", "x-api-key"), ("query", "api_key", "query")],
)
def test_a_call_carries_the_upstreams_credential_and_nothing_else_shows_it(
    api, agent, api_server, kind, field, arrives
):
    # given: acme's API key stored encrypted on its upstream
    UpstreamFactory(orders=True, tenant=agent.tenant, base_url=api_server.url + "/v2",
                    credential__kind=kind, credential__field=field, credential__value=SECRET)
    tenant_tool(agent, upstream="orders-api")

    # when
    response = invoke(api, "order_lookup", {"order_id": "o-1"})

    # then: the API got the key where its kind says, under the upstream's base URL
    assert response.json()["status"] == "ok"
    received = api_server.last
    assert received.path == "/v2/orders/o-1"
    if arrives == "authorization":
        assert received.headers["authorization"] == f"Bearer {SECRET}"
    elif arrives == "query":
        assert received.query == [("api_key", SECRET)]
    else:
        assert received.headers[arrives] == SECRET
    # and the key is in no answer and no log row
    assert SECRET not in response.content.decode()
    assert all(SECRET not in str(row.envelope) for row in Invocation.objects.all())


def test_an_upstream_of_another_tenant_is_unknown_and_nothing_is_sent(api, agent, api_server):
    # given: globex has an upstream of that name; acme has none
    UpstreamFactory(orders=True, tenant=TenantFactory(slug="globex"), base_url=api_server.url,
                    credential__value=SECRET)
    tenant_tool(agent, upstream="orders-api", side_effect="write")

    # when
    body = invoke(api, "order_lookup", {"order_id": "o-1"}).json()

    # then
    assert (body["status"], body["kind"]) == ("error", "unavailable")
    assert "nothing was sent" in body["message"]
    assert api_server.received == []
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


def test_a_per_user_credential_needs_the_users_own_token(api, agent, api_server, session_for):
    # given: the upstream acts as each end user
    UpstreamFactory(orders=True, tenant=agent.tenant, base_url=api_server.url, credential__per_subject=True)
    tenant_tool(agent, upstream="orders-api")
    session = session_for("u-1")

    # when: the user has not connected their account
    refused = invoke(api, "order_lookup", {"order_id": "o-1"}, session=session).json()
    # and then the agent's backend registers their token
    registered = api.put(
        "/api/v1/credentials/orders-key/subjects/u-1", {"value": "user-token-u1-0001"}, format="json",
        HTTP_X_TOOLHUB_SESSION=session,
    )
    answered = invoke(api, "order_lookup", {"order_id": "o-1"}, session=session, call_id="call_2").json()

    # then
    assert (refused["kind"], refused["recoverable"]) == ("forbidden", False)
    assert "connect their account" in refused["hint"]
    assert registered.status_code == 204
    assert answered["status"] == "ok"
    assert [r.headers["authorization"] for r in api_server.received] == ["Bearer user-token-u1-0001"]


BASIC_USER, BASIC_PASSWORD = "svc-orders", "Pa55-w0rd-7c1e9b"


def _decoded(received: Received) -> tuple[str, str]:
    user, _, password = base64.b64decode(received.headers["authorization"].split()[1]).decode().partition(":")
    return user, password


@pytest.mark.parametrize("side_effect", ["readonly", "write"])
def test_a_basic_auth_password_the_upstream_decodes_and_echoes_never_reaches_the_model(
    api, agent, api_server, side_effect
):
    # given: an upstream that decodes the Basic credential it got and echoes its parts
    UpstreamFactory(orders=True, tenant=agent.tenant, base_url=api_server.url,
                    credential__kind="basic", credential__value=f"{BASIC_USER}:{BASIC_PASSWORD}")
    tenant_tool(agent, upstream="orders-api", side_effect=side_effect)

    def echoing(received: Received) -> Answer:
        user, password = _decoded(received)
        return Answer(body={"order_id": "o-1", "user": user, "password": password,
                            "login": f"{user}:{password}", "note": f"signed in with {password}."})

    api_server.answer = echoing

    # when
    response = invoke(api, "order_lookup", {"order_id": "o-1"})

    # then: the upstream got the password; the model, the ledger and the invocation log never see it
    assert _decoded(api_server.last) == (BASIC_USER, BASIC_PASSWORD)
    body = response.json()
    assert body["status"] == "ok", body
    assert body["data"] == {"order_id": "o-1", "user": BASIC_USER, "password": "[redacted]",
                            "login": "[redacted]", "note": "signed in with [redacted]."}
    assert BASIC_PASSWORD not in response.content.decode()
    assert all(BASIC_PASSWORD not in str(row.envelope) for row in Invocation.objects.all())
    assert Invocation.objects.exists()
    entries = list(LedgerEntry.objects.all())
    assert len(entries) == (1 if side_effect == "write" else 0)
    assert all(BASIC_PASSWORD not in str(entry.result) for entry in entries)


def test_a_basic_auth_password_quoted_in_a_refusal_never_reaches_the_model(api, agent, api_server):
    # given: an upstream that refuses, quoting the password it decoded
    UpstreamFactory(orders=True, tenant=agent.tenant, base_url=api_server.url,
                    credential__kind="basic", credential__value=f"{BASIC_USER}:{BASIC_PASSWORD}")
    tenant_tool(agent, upstream="orders-api")
    api_server.answer = lambda received: Answer(
        status=400, body={"error": {"message": f"password {_decoded(received)[1]} is not allowed here"}}
    )

    # when
    response = invoke(api, "order_lookup", {"order_id": "o-1"})

    # then
    body = response.json()
    assert (body["status"], body["kind"]) == ("error", "invalid_args")
    assert "password [redacted] is not allowed here" in body["message"]
    assert BASIC_PASSWORD not in response.content.decode()
    assert all(BASIC_PASSWORD not in str(row.envelope) for row in Invocation.objects.all())


def test_a_cookie_an_upstream_sets_is_never_sent_with_a_later_call(api, agent, api_server, session_for):
    # given: the upstream answers one user's call with a session cookie of theirs
    UpstreamFactory(orders=True, tenant=agent.tenant, base_url=api_server.url)
    tenant_tool(agent, upstream="orders-api")
    api_server.answer = lambda received: Answer(
        body={"order_id": "o-1"}, headers={"Set-Cookie": "session=of-u-1; Path=/"}
    )
    first = invoke(api, "order_lookup", {"order_id": "o-1"}, session=session_for("u-1")).json()

    # when: another user's call goes to the same host
    second = invoke(api, "order_lookup", {"order_id": "o-2"}, session=session_for("u-2"), call_id="c2").json()

    # then: it carries no cookie of the first
    assert first["status"] == second["status"] == "ok"
    assert [r.headers.get("cookie") for r in api_server.received] == [None, None]


def test_a_tightened_egress_policy_refuses_the_next_call_on_a_kept_alive_connection(api, agent, settings):
    with http_upstream(keep_alive=True) as server:
        # given: two calls went over one kept-alive connection
        UpstreamFactory(orders=True, tenant=agent.tenant, base_url=server.url)
        tenant_tool(agent, upstream="orders-api")
        answered = [invoke(api, "order_lookup", {"order_id": f"o-{n}"}, call_id=f"c{n}").json()
                    for n in (1, 2)]

        # when: the policy no longer allows the host
        settings.TOOLHUB_EGRESS_ALLOW = []
        refused = invoke(api, "order_lookup", {"order_id": "o-3"}, call_id="c3").json()

    # then
    assert [body["status"] for body in answered] == ["ok", "ok"]
    assert server.received[0].peer == server.received[1].peer
    assert (refused["status"], refused["kind"]) == ("error", "unavailable")
    assert "Nothing was sent" in refused["message"]
    assert len(server.received) == 2
