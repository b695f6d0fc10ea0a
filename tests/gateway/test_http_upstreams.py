"""A tenant's tool calls its API through a named upstream: the base URL and the credential
come from the upstream (decrypted only to send), never from the tool's arguments or answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone

from apps.audit.models import Invocation
from apps.catalog.models import Tool, ToolVersion
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.models import Grant
from apps.upstreams.models import Upstream as UpstreamRecord
from apps.upstreams.services import credential_set, upstream_save
from tests.factories import TenantFactory
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Upstream, http_upstream

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


def an_upstream(tenant, url: str, *, kind: str = "bearer", field: str = "", per_subject: bool = False):
    credential = credential_set(
        tenant=tenant, name="orders-key", kind=kind, field=field, value=None if per_subject else SECRET,
        per_subject=per_subject, actor="test",
    )
    record = UpstreamRecord(
        tenant=tenant, name="orders-api", kind="http", base_url=url, credential=credential
    )
    return upstream_save(upstream=record, actor="test")


@pytest.mark.parametrize(
    ("kind", "field", "arrives"),
    [("bearer", "", "authorization"), ("header", "X-Api-Key", "x-api-key"), ("query", "api_key", "query")],
)
def test_a_call_carries_the_upstreams_credential_and_nothing_else_shows_it(
    api, agent, api_server, kind, field, arrives
):
    # given: acme's API key stored encrypted on its upstream
    an_upstream(agent.tenant, api_server.url + "/v2", kind=kind, field=field)
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
    an_upstream(TenantFactory(slug="globex"), api_server.url)
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
    an_upstream(agent.tenant, api_server.url, per_subject=True)
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
