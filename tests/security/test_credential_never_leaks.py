"""A unique secret, an upstream's credential, sent through every path a call can take (success,
4xx, a 5xx and a timeout on writes, their reconciliation through a status endpoint, an end
user's own token) is received by the upstream and appears in no answer, no header, no log
record, no export, no admin page and no row of any table (its ciphertext included)."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import Tool, ToolVersion
from apps.gateway.reconciliation import ledger_reconcile_entry
from apps.gateway.tasks import ledger_reconcile_entry_task
from apps.ledger.models import LedgerEntry, LedgerState
from apps.tenancy.models import Agent, Grant
from apps.tenancy.services import session_mint
from apps.upstreams.models import Credential
from tests.factories import CredentialFactory, TenantFactory, UpstreamFactory
from tests.gateway.conftest import invoke
from tests.http_upstream import Answer, Received, Upstream, http_upstream
from tests.upstreams.conftest import agent_api

pytestmark = pytest.mark.django_db

ORDER_ID = {"type": "string", "description": "The order's id."}
LOOKUP = {
    "type": "object", "properties": {"order_id": ORDER_ID}, "required": ["order_id"],
    "additionalProperties": False,
}
NOTE = {
    "type": "object",
    "properties": {"order_id": ORDER_ID, "text": {"type": "string", "description": "The note."}},
    "required": ["order_id", "text"],
    "additionalProperties": False,
}


@pytest.fixture
def orders_api() -> Iterator[Upstream]:
    """Answers by order id: ORD-404 and ORD-409 are refused, ORD-401 too, quoting the key it
    got (as some APIs do); a note to ORD-500 fails with a 500 and one to ORD-SLOW answers too
    late; the status endpoint knows only the slow note."""
    with http_upstream() as api:
        applied: set[str] = set()

        def answer(received: Received) -> Answer:
            segments = received.segments
            if segments[0] == "status":
                found = segments[-1] in applied
                return Answer(body={"note_id": "n-slow"}) if found else Answer(status=404, body={})
            order = segments[1]
            if order in ("ORD-404", "ORD-409"):
                return Answer(status=int(order[4:]), body={"error": {"message": f"refused {order}"}})
            if order == "ORD-401":
                sent = received.headers.get("authorization") or received.headers.get("x-api-key")
                sent = sent or dict(received.query)["api_key"]
                return Answer(status=401, body={"error": {"message": f"The key {sent} is not valid here."}})
            if order == "ORD-500":
                return Answer(status=500, body={"error": {"message": "database is down"}})
            if order == "ORD-SLOW":
                applied.add(received.headers["idempotency-key"])
                return Answer(status=201, body={"note_id": "n-slow"}, delay_s=1.0)
            return Answer(body={"order_id": order, "status": "paid"})

        api.answer = answer
        yield api


def governed_tool(agent: Agent, name: str, *, upstream: str, params: dict, **config) -> ToolVersion:
    side_effect = "readonly" if config["method"] == "GET" else "write"
    tool = Tool.objects.create(name=name, tenant=agent.tenant)
    version = ToolVersion.objects.create(
        tool=tool, number=1, description=f"{name}: one order's business. At most one order.",
        parameters=params, side_effect=side_effect, executor="http", timeout_s=0.5,
        executor_config={"upstream": upstream, **config},
    )
    version.status, version.published_at = "published", timezone.now()
    version.save()
    Grant.objects.create(tenant=agent.tenant, agent=agent, tool=tool)
    return version


def every_row_as_text() -> dict[str, list[str]]:
    """Every row of every model's table, as PostgreSQL prints it (JSON and text alike)."""
    rows = {}
    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            table = model._meta.db_table
            cursor.execute(f'SELECT t::text FROM "{table}" t')
            rows[table] = [row for (row,) in cursor.fetchall()]
    return rows


def response_text(response: HttpResponse) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.items())
    return f"{headers}\n{response.content.decode(errors='replace')}"


@pytest.mark.parametrize(("kind", "field"), [("header", "X-Api-Key"), ("bearer", ""), ("query", "api_key")])
def test_the_credential_reaches_the_upstream_and_nothing_else(orders_api, caplog, tmp_path, kind, field):
    caplog.set_level(logging.DEBUG)
    secret = f"sk-leak-{uuid.uuid4().hex}"
    users_token = f"sk-leak-user-{uuid.uuid4().hex}"
    # given: acme's API key on its upstream, and a CRM that acts as each end user
    tenant = TenantFactory(slug="acme")
    api = agent_api(tenant)
    agent = Agent.objects.get(tenant=tenant)
    UpstreamFactory(orders=True, tenant=tenant, base_url=orders_api.url,
                    credential__kind=kind, credential__field=field, credential__value=secret)
    UpstreamFactory(keyed=True, tenant=tenant, name="crm-api", base_url=orders_api.url,
                    credential__name="crm-key", credential__per_subject=True)
    governed_tool(agent, "order_lookup", upstream="orders-api", params=LOOKUP,
                  method="GET", path="/orders/{order_id}")
    governed_tool(agent, "order_note", upstream="orders-api", params=NOTE, method="POST",
                  path="/orders/{order_id}/notes", status_path="/status/{idempotency_key}")
    governed_tool(agent, "crm_lookup", upstream="crm-api", params=LOOKUP,
                  method="GET", path="/orders/{order_id}")
    sessions = {
        subject: session_mint(tenant_id=tenant.pk, agent_id=agent.pk, subject=subject, attributes={},
                              ttl_s=900)[0]
        for subject in ("u-1", "u-2")
    }
    responses: list[HttpResponse] = []

    # when: calls end every way: answered, refused (404, 401, 409), failed (500), timed out
    for n, (tool, order) in enumerate([
        ("order_lookup", "ORD-200"), ("order_lookup", "ORD-404"), ("order_lookup", "ORD-401"),
        ("order_note", "ORD-200"),
        ("order_note", "ORD-409"), ("order_note", "ORD-500"), ("order_note", "ORD-SLOW"),
    ]):
        arguments = {"order_id": order} if tool == "order_lookup" else {"order_id": order, "text": "hi"}
        responses.append(invoke(api, tool, arguments, call_id=f"call_{n}"))
        responses.append(invoke(api, tool, arguments, call_id=f"call_{n}"))  # and its replay
    # and the two unknown writes are reconciled, by the task and by the service
    unknown = list(LedgerEntry.objects.filter(state=LedgerState.UNKNOWN).order_by("created_at"))
    settled = [ledger_reconcile_entry_task(str(unknown[0].pk)),
               ledger_reconcile_entry(entry_id=unknown[1].pk)]
    responses.extend(invoke(api, "order_note", {"order_id": o, "text": "hi"}, call_id=c)
                     for o, c in (("ORD-500", "call_5"), ("ORD-SLOW", "call_6")))
    # and an end user calls before and after the agent's backend registers their own token
    def crm_lookup(subject: str, call_id: str) -> HttpResponse:
        return invoke(api, "crm_lookup", {"order_id": "ORD-200"}, session=sessions[subject], call_id=call_id)

    responses.append(crm_lookup("u-1", "c1"))
    responses.append(api.put("/api/v1/credentials/crm-key/subjects/u-1", {"value": users_token},
                             format="json", HTTP_X_TOOLHUB_SESSION=sessions["u-1"]))
    responses.extend([crm_lookup("u-1", "c2"), crm_lookup("u-2", "c3")])
    # and people look at what happened: the tool exports, the catalog export, the admin
    responses.extend(api.get(f"/api/v1/tools?format={f}") for f in ("openai", "anthropic", "mcp", "toolhub"))
    export = tmp_path / "acme.yaml"
    call_command("catalog_export", "--tenant", "acme", "--out", str(export), stdout=io.StringIO())
    admin = Client()
    admin.force_login(User.objects.create_superuser(username="root", password="pw"))
    pages = [reverse(f"admin:{page}_changelist") for page in (
        "ledger_ledgerentry", "ledger_triageentry", "audit_invocation", "audit_auditevent",
        "upstreams_credential", "upstreams_upstream",
    )]
    pages += [reverse("admin:ledger_ledgerentry_change", args=[e.pk]) for e in LedgerEntry.objects.all()]
    pages += [reverse("admin:upstreams_credential_change", args=[c.pk]) for c in Credential.objects.all()]
    responses.extend(admin.get(page) for page in pages)

    # then: the calls ended as each path says, and the reconciler settled the unknown writes
    kinds = [r.json().get("kind") for r in responses[:14:2]]
    assert kinds == [None, "not_found", "upstream_error", None, "business_rule", "upstream_error", "timeout"]
    assert '"The key [redacted] is not valid here."' in responses[4].json()["message"]
    assert settled == [LedgerState.FAILED, LedgerState.COMMITTED]
    assert [responses[n].json().get("kind") for n in (16, 18, 19)] == ["forbidden", None, "forbidden"]
    assert all(r.status_code in (200, 204) for r in responses)
    # and the upstream did receive the secrets (the control: they were used)
    sent = [str(r.headers) + r.target for r in orders_api.received]
    assert sum(secret in text for text in sent) == len(orders_api.received) - 1
    assert sum(users_token in text for text in sent) == 1
    if kind == "query":  # httpx still logs each request, its query values hidden
        assert "?api_key=[redacted]" in caplog.text
    # but nothing else holds them
    outputs = {f"response {n}": response_text(r) for n, r in enumerate(responses)}
    outputs["catalog export"] = export.read_text()
    outputs.update({f"log {n}": str(vars(record)) for n, record in enumerate(caplog.records)})
    outputs.update({f"log {n} formatted": caplog.handler.format(r) for n, r in enumerate(caplog.records)})
    outputs.update({f"table {table}": "\n".join(rows) for table, rows in every_row_as_text().items()})
    for where, text in outputs.items():
        for value in (secret, users_token):
            at = text.find(value)
            assert at == -1, f"{where}: {text[max(0, at - 200): at + 80]}"


@pytest.mark.parametrize(("kind", "field"), [("header", "X-Api-Key"), ("bearer", ""), ("query", "api_key")])
def test_a_key_the_upstream_echoes_in_a_successful_answer_never_reaches_the_model(kind, field):
    # A secret with "/" and '"', which JSON may write escaped, so only a parsed walk finds it.
    secret = f'sk/leak"{uuid.uuid4().hex}'
    tenant = TenantFactory(slug="acme")
    api = agent_api(tenant)
    agent = Agent.objects.get(tenant=tenant)
    key = CredentialFactory(tenant=tenant, name="debug-key", kind=kind, field=field, value=secret)
    with http_upstream() as echo:
        # Like httpbin's /anything: the answer repeats the request, credentials included.
        echo.answer = lambda received: Answer(body={
            "order_id": received.segments[-1],
            "request": {"headers": received.headers, "url": received.target, received.target: "seen"},
        })
        UpstreamFactory(tenant=tenant, name="debug-api", base_url=echo.url, credential=key)
        governed_tool(agent, "order_lookup", upstream="debug-api", params=LOOKUP,
                      method="GET", path="/orders/{order_id}")

        answered = invoke(api, "order_lookup", {"order_id": "ORD-1"}, call_id="echo")

    envelope = answered.json()
    assert envelope["status"] == "ok" and envelope["data"]["order_id"] == "ORD-1"
    assert "[redacted]" in json.dumps(envelope["data"])
    forms = (secret, json.dumps(secret)[1:-1], quote(secret, safe=""))
    assert not any(form in answered.content.decode() for form in forms)
    for table, rows in every_row_as_text().items():
        assert not any(form in row for row in rows for form in forms), table
