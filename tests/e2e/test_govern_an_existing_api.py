"""The issue's "Done when", as people would do it: an existing REST API on loopback, described by
its own OpenAPI document, becomes governed tools in the admin (its key stored encrypted, the
document imported, the drafts reviewed, published and granted), and an agent calls them through
REST, both vendor adapters and /mcp, with the pipeline and the ledger in between."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.catalog.models import ToolVersion, VersionStatus
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.models import Agent, StaffScope, Tenant
from apps.tenancy.services import agent_key_issue
from apps.upstreams.models import Credential, Upstream
from tests.adapters.test_adapters import anthropic_message, openai_message, post_anthropic, post_openai
from tests.factories import AgentFactory, TenantFactory
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Received, http_upstream
from tests.http_upstream import Upstream as OrdersAPI
from tests.mcp.test_mcp import initialize, rpc

pytestmark = pytest.mark.django_db(transaction=True)

API_KEY = "orders-api-key-5e1f0c2a9b7d"
ORDER = {"order_id": "ORD-000042", "status": "paid", "amount_cents": 4200}
# What a curator needs: store a credential, import (add tools and versions), publish, grant.
CURATOR_PERMISSIONS = [
    ("upstreams", "add_credential"), ("upstreams", "view_credential"), ("upstreams", "view_upstream"),
    ("catalog", "add_tool"), ("catalog", "view_tool"),
    ("catalog", "add_toolversion"), ("catalog", "change_toolversion"), ("catalog", "view_toolversion"),
    ("tenancy", "add_grant"), ("tenancy", "view_grant"),
]
SHOWN = re.compile(r'name="shown" value="([0-9a-f]*)"')


def orders_api_document(server_url: str) -> dict:
    """The API's own description: a read and a write, authenticated by an API key header."""
    order_id = {
        "name": "order_id", "in": "path", "required": True,
        "description": "The order's id: ORD- and six digits.",
        "schema": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Orders API", "version": "1.4.0"},
        "servers": [{"url": server_url}],
        "security": [{"apiKey": []}],
        "components": {
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
            "schemas": {
                "NewNote": {
                    "type": "object", "required": ["text"], "additionalProperties": False,
                    "properties": {"text": {"type": "string", "maxLength": 500,
                                            "description": "The note, as the support agent writes it."}},
                },
            },
        },
        "paths": {
            "/orders/{order_id}": {
                "get": {
                    "operationId": "getOrder",
                    "summary": "One order by its id.",
                    "description": "Its status and amount. Not for changing the order.",
                    "parameters": [order_id, {
                        "name": "expand", "in": "query", "required": False,
                        "description": "What to include besides the order; null for nothing.",
                        "schema": {"type": "string", "enum": ["items", "payments"]},
                    }],
                    "responses": {"200": {"description": "The order."}},
                },
            },
            "/orders/{order_id}/notes": {
                "post": {
                    "operationId": "addOrderNote",
                    "summary": "Adds a note to an order.",
                    "description": "The note is shown to the support team, never to the customer.",
                    "parameters": [order_id],
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewNote"}},
                    }},
                    "responses": {"201": {"description": "The note."}},
                },
            },
        },
    }


@pytest.fixture
def orders_api() -> Iterator[OrdersAPI]:
    """The existing API: it serves its document, one order, and adds notes."""
    with http_upstream() as api:
        notes: list[dict] = []

        def answer(received: Received) -> Answer:
            if received.path == "/openapi.json":
                return Answer(body=orders_api_document(api.url))
            if received.headers.get("x-api-key") != API_KEY:
                return Answer(status=401, body={"error": {"message": "unknown API key"}})
            if received.method == "GET" and received.segments == ["orders", "ORD-000042"]:
                return Answer(body=ORDER)
            if received.method == "POST" and received.segments == ["orders", "ORD-000042", "notes"]:
                notes.append({"note_id": f"n-{len(notes) + 1}", **received.json()})
                return Answer(status=201, body=notes[-1])
            return Answer(status=404, body={"error": {"message": "no such order"}})

        api.answer = answer
        yield api


def curator_of(tenant: Tenant) -> Client:
    user = User.objects.create_user(username="curator", password="pw", is_staff=True)
    for app_label, codename in CURATOR_PERMISSIONS:
        permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
        user.user_permissions.add(permission)
    StaffScope.objects.create(user=user, tenant=tenant)
    client = Client()
    client.force_login(user)
    return client


def publish_in_admin(curator: Client, version: ToolVersion) -> None:
    """Open the draft's page, read its lint findings, press Publish with what the page showed."""
    page = curator.get(reverse("admin:catalog_toolversion_change", args=[version.pk]))
    assert page.status_code == 200 and page.context["lint_has_errors"] is False
    (shown,) = SHOWN.findall(page.content.decode())
    button = reverse("admin:catalog_toolversion_button", args=[version.pk, "publish"])
    published = curator.post(button, {"note": "reviewed against the API's docs", "shown": shown}, follow=True)
    assert f"Published {version.tool.name} v1." in published.content.decode()


def agent_api(agent: Agent) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    return client


def test_a_curator_governs_an_existing_api_and_an_agent_calls_it_every_way(orders_api, imports_in_process):
    # given: a tenant with an agent, and its curator in the admin
    tenant = TenantFactory(slug="acme")
    bot = AgentFactory(tenant=tenant, name="support-bot")
    curator = curator_of(tenant)

    # when: the curator stores the API's key (Upstreams → Credentials → Add)
    stored = curator.post(reverse("admin:upstreams_credential_add"), {
        "name": "orders-key", "kind": "header", "field": "X-Api-Key", "value": API_KEY,
        "subjects-TOTAL_FORMS": 0, "subjects-INITIAL_FORMS": 0,
    })
    # and imports the API's document by its URL, with that credential
    imported = curator.post("/admin/imports/openapi/", {
        "url": f"{orders_api.url}/openapi.json", "upstream": "orders-api", "credential": "orders-key",
    }, follow=True)

    # then: the key is stored encrypted, and each operation is a draft calling the new upstream
    assert stored.status_code == 302
    credential = Credential.objects.get(tenant=tenant, name="orders-key")
    assert API_KEY not in credential.ciphertext and credential.last4 == "9b7d"
    upstream = Upstream.objects.get(tenant=tenant, name="orders-api")
    assert (upstream.base_url, upstream.credential) == (orders_api.url, credential)
    assert imported.status_code == 200
    drafts = {v.tool.name: v for v in ToolVersion.objects.filter(tool__tenant=tenant).select_related("tool")}
    assert set(drafts) == {"get_order", "add_order_note"}
    assert {v.status for v in drafts.values()} == {VersionStatus.DRAFT}
    assert (drafts["get_order"].side_effect, drafts["add_order_note"].side_effect) == ("readonly", "write")
    assert "x_api_key" not in json.dumps(drafts["get_order"].parameters)  # the credential sends it
    html = imported.content.decode()
    for version in drafts.values():
        assert f">{version.tool.name} v1</a> (draft)" in html

    # when: the curator reviews and publishes each draft, and grants the tools to the agent
    for version in drafts.values():
        publish_in_admin(curator, version)
        granted = curator.post(reverse("admin:tenancy_grant_add"), {"agent": bot.pk, "tool": version.tool.pk})
        assert granted.status_code == 302

    # and the agent calls the read and the write through REST
    api = agent_api(bot)
    read = {"order_id": "ORD-000042", "expand": "items"}
    note = {"order_id": "ORD-000042", "text": "Customer called about delivery."}
    rest_read = invoke(api, "get_order", read, task_id="t-rest", call_id="call_1").json()
    rest_write = invoke(api, "add_order_note", note, task_id="t-rest", call_id="call_2").json()
    replay = invoke(api, "add_order_note", note, task_id="t-rest", call_id="call_2").json()
    # through the OpenAI and the Anthropic adapters
    openai = post_openai(api, openai_message(
        ("call_r", "get_order", read), ("call_w", "add_order_note", note),
    )).json()["messages"]
    anthropic = post_anthropic(api, anthropic_message(
        ("toolu_r", "get_order", read), ("toolu_w", "add_order_note", note),
    )).json()["content"]
    # and through /mcp
    key = agent_key_issue(agent=bot).secret
    session_id = initialize(Client(), key)["Mcp-Session-Id"]
    mcp = Client()
    listed = rpc(mcp, "tools/list", key=key, session_id=session_id).json()["result"]["tools"]
    mcp_calls = [
        rpc(mcp, "tools/call", {"name": name, "arguments": arguments}, key=key, session_id=session_id,
            rpc_id=n, HTTP_X_TOOLHUB_TASK="t-mcp").json()["result"]
        for n, (name, arguments) in enumerate([("get_order", read), ("add_order_note", note)], start=2)
    ]

    # then: every way answered the order and the note
    envelopes = [
        rest_read, rest_write,
        *(json.loads(m["content"]) for m in openai),
        *(json.loads(block["content"]) for block in anthropic),
        *(call["structuredContent"] for call in mcp_calls),
    ]
    assert [(e["tool"], e["status"]) for e in envelopes] == [
        ("get_order", "ok"), ("add_order_note", "ok"),
    ] * 4
    assert [e["data"] for e in envelopes[::2]] == [ORDER] * 4
    assert [e["data"]["text"] for e in envelopes[1::2]] == [note["text"]] * 4
    assert [call["isError"] for call in mcp_calls] == [False, False]
    assert {"get_order", "add_order_note"} <= {tool["name"] for tool in listed}
    # the replay of the REST write was answered from the ledger, not sent again
    assert (replay["status"], replay["cached"], replay["data"]) == ("ok", True, rest_write["data"])

    # and the API received exactly one request per call, each with its key
    calls = [r for r in orders_api.received if r.path != "/openapi.json"]
    assert [(r.method, r.path) for r in calls] == [
        ("GET", "/orders/ORD-000042"), ("POST", "/orders/ORD-000042/notes"),
    ] * 4
    assert {r.headers["x-api-key"] for r in calls} == {API_KEY}
    reads, writes = calls[::2], calls[1::2]
    assert {tuple(r.query) for r in reads} == {(("expand", "items"),)}
    assert [r.json() for r in writes] == [{"text": note["text"]}] * 4
    # every write went through the ledger, committed, its key sent as the idempotency header
    entries = LedgerEntry.objects.filter(tool__name="add_order_note").order_by("created_at")
    assert [e.state for e in entries] == [LedgerState.COMMITTED] * 4
    assert [r.headers["idempotency-key"] for r in writes] == [e.key for e in entries]
    assert [e.task_id for e in entries] == ["t-rest", "t-openai", "t-anthropic", "t-mcp"]
