"""Tenant isolation on the agent API and /mcp: `acme`'s agent key against `globex`'s tools,
executions, sessions and MCP sessions.

Every endpoint under /api/v1/ needs an entry in API_CASES (the coverage test walks the URL
conf). Each case asserts what acme's agent must get (unknown_tool, 404, a list without
globex's tools...) and the common checks follow: no 5xx, nothing of globex in the answer
beyond the names acme itself sent, and no row of globex created or changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from apps.catalog.exports import FORMATS
from apps.tenancy.services import agent_key_issue, session_mint

from .admin_matrix import registered
from .conftest import mcp_initialize
from .makers import MARK, TenantRows

pytestmark = pytest.mark.django_db


@dataclass
class Agents:
    acme: TenantRows
    globex: TenantRows
    key: str  # acme's
    globex_key: str
    client: Client

    def headers(self, key: str | None = None, **extra: str) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {key or self.key}", **extra}

    def post(self, path: str, body: Any, key: str | None = None, **extra: str):
        return self.client.post(path, json.dumps(body), content_type="application/json",
                                **self.headers(key, **extra))

    def get(self, path: str, key: str | None = None, **params: str):
        return self.client.get(path, params, **self.headers(key))

    @property
    def foreign_tool(self) -> str:
        return self.globex["catalog.Tool"].name

    @property
    def own_tool(self) -> str:
        return self.acme["catalog.Tool"].name

    def globex_session(self) -> str:
        agent = self.globex["tenancy.Agent"]
        token, _ = session_mint(tenant_id=agent.tenant_id, agent_id=agent.pk, subject=f"{MARK}-user",
                                attributes={}, ttl_s=600)
        return token


@pytest.fixture
def agents() -> Agents:
    acme, globex = TenantRows("acme"), TenantRows(MARK)
    for rows in (acme, globex):
        rows.make("tenancy.Grant", "ledger.LedgerEntry", "catalog.Toolset", "upstreams.Upstream")
    return Agents(
        acme=acme, globex=globex,
        key=agent_key_issue(agent=acme["tenancy.Agent"]).secret,
        globex_key=agent_key_issue(agent=globex["tenancy.Agent"]).secret,
        client=Client(),
    )


def _call(name: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps({"query": "orders"})}


def _kind(envelope: dict[str, Any]) -> str:
    return envelope["kind"] if envelope["status"] == "error" else envelope["status"]


def _invoke(a: Agents) -> list[Any]:
    foreign = a.post("/api/v1/invoke", {"task_id": "t-1", "call": _call(a.foreign_tool)})
    replay = a.post("/api/v1/invoke", {"task_id": f"{MARK}-task", "call": _call(a.foreign_tool)})
    borrowed_session = a.post("/api/v1/invoke", {"task_id": "t-2", "call": _call(a.own_tool)},
                              HTTP_X_TOOLHUB_SESSION=a.globex_session())
    assert _kind(foreign.json()) == _kind(replay.json()) == "unknown_tool"
    assert _kind(borrowed_session.json()) == "forbidden"
    return [foreign, replay, borrowed_session]


def _invoke_batch(a: Agents) -> list[Any]:
    response = a.post("/api/v1/invoke/batch",
                      {"task_id": "t-1", "calls": [_call(a.foreign_tool), _call(a.own_tool, "call_2")]})
    assert [_kind(e) for e in response.json()["results"]] == ["unknown_tool", "ok"]
    return [response]


def _execution_detail(a: Agents) -> list[Any]:
    response = a.get(f"/api/v1/executions/{a.globex['ledger.LedgerEntry'].pk}")
    assert response.status_code == 404 and response.json()["kind"] == "not_found"
    return [response]


def _tool_list(a: Agents) -> list[Any]:
    responses = [a.get("/api/v1/tools", format=fmt) for fmt in FORMATS]
    responses.append(a.get("/api/v1/tools", toolset=a.globex["catalog.Toolset"].name))
    for response in responses[:-1]:
        assert len(response.json()["tools"]) == 2  # acme's own tool and request_capability
    return responses


def _adapter_openai(a: Agents) -> list[Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": a.foreign_tool, "arguments": "{}"}}
    response = a.post("/api/v1/adapters/openai",
                      {"task_id": "t-1", "message": {"role": "assistant", "tool_calls": [call]}})
    assert _kind(json.loads(response.json()["messages"][0]["content"])) == "unknown_tool"
    return [response]


def _adapter_anthropic(a: Agents) -> list[Any]:
    use = {"type": "tool_use", "id": "toolu_1", "name": a.foreign_tool, "input": {"query": "orders"}}
    response = a.post("/api/v1/adapters/anthropic",
                      {"task_id": "t-1", "message": {"role": "assistant", "content": [use]}})
    assert _kind(json.loads(response.json()["content"][0]["content"])) == "unknown_tool"
    return [response]


def _session_create(a: Agents) -> list[Any]:
    # Minting for globex's user name gives acme a token for acme's agent only: nothing of globex.
    response = a.post("/api/v1/sessions", {"subject": f"{MARK}-user"})
    token = response.json()["token"]
    with_it = a.post("/api/v1/invoke", {"task_id": "t-3", "call": _call(a.foreign_tool)},
                     HTTP_X_TOOLHUB_SESSION=token)
    assert response.status_code == 201 and _kind(with_it.json()) == "unknown_tool"
    return [response, with_it]


def _mcp(a: Agents) -> list[Any]:
    session = mcp_initialize(a.client, a.key)
    globex_session = mcp_initialize(a.client, a.globex_key)

    def rpc(method: str, params: dict[str, Any], mcp_session: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return a.post("/mcp", body, HTTP_MCP_SESSION_ID=mcp_session)

    listed = rpc("tools/list", {}, session)
    called = rpc("tools/call", {"name": a.foreign_tool, "arguments": {"query": "orders"}}, session)
    borrowed = rpc("tools/list", {}, globex_session)
    assert [t["name"] for t in listed.json()["result"]["tools"]] == [a.own_tool, "request_capability"]
    assert called.json()["result"]["structuredContent"]["kind"] == "unknown_tool"
    assert borrowed.status_code == 404
    return [listed, called, borrowed]


def _credential_subject(a: Agents) -> list[Any]:
    credential = a.globex["upstreams.Credential"]
    path = f"/api/v1/credentials/{credential.name}/subjects/{MARK}-user"
    put = a.client.put(path, json.dumps({"value": "acme-token-0000"}), content_type="application/json",
                       **a.headers())
    delete = a.client.delete(path, **a.headers())
    for response in (put, delete):
        assert response.status_code == 404 and response.json()["kind"] == "not_found"
    return [put, delete]


# URL name → the requests acme's agent makes about globex's objects there.
API_CASES: dict[str, Callable[[Agents], list[Any]]] = {
    "invoke": _invoke,
    "invoke-batch": _invoke_batch,
    "execution-detail": _execution_detail,
    "tool-list": _tool_list,
    "adapter-openai": _adapter_openai,
    "adapter-anthropic": _adapter_anthropic,
    "session-create": _session_create,
    "credential-subject": _credential_subject,
    "mcp": _mcp,
}


def _state(rows: TenantRows) -> tuple[dict[str, Any], dict[str, int]]:
    """The tenant's rows as stored, and how many rows of each tenant-owned model it has."""
    tenant = rows["tenancy.Tenant"]
    counts = {
        model._meta.label: model._default_manager.filter(tenant=tenant).count()
        for model, _ in registered()
        if any(field.name == "tenant" for field in model._meta.get_fields())
    }
    return rows.stored(), counts


@pytest.mark.parametrize("name", API_CASES)
def test_an_agent_never_reaches_another_tenants_objects(agents, name):
    before = _state(agents.globex)

    responses = API_CASES[name](agents)

    sent = (agents.foreign_tool, agents.globex["catalog.Toolset"].name, f"{MARK}-task", f"{MARK}-user",
            agents.globex["upstreams.Credential"].name)
    for response in responses:
        assert response.status_code < 500, response.content[:300]
        text = response.content.decode()
        for echoed in sent:
            text = text.replace(echoed, "")
        assert MARK not in text, f"{name} answered with {MARK}'s data: {text[:300]}"
    assert _state(agents.globex) == before


def test_the_other_tenant_reaches_the_same_objects_with_its_own_key(agents):
    # The control: what acme is refused is there, for globex.
    entry = agents.globex["ledger.LedgerEntry"]
    called = agents.post("/api/v1/invoke", {"task_id": "t-1", "call": _call(agents.foreign_tool)},
                         key=agents.globex_key)
    execution = agents.get(f"/api/v1/executions/{entry.pk}", key=agents.globex_key)
    listed = agents.get("/api/v1/tools", key=agents.globex_key)

    assert _kind(called.json()) == "ok"
    assert execution.status_code == 200 and execution.json()["kind"] == "outcome_unknown"
    assert agents.foreign_tool in [tool["name"] for tool in listed.json()["tools"]]
