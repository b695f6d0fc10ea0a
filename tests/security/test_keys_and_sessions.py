"""Keys, session tokens and identity arguments, on every endpoint that takes them.

tests/tenancy checks the key and token functions one by one; here every bad key meets
every agent endpoint (found in the URL conf), every bad token meets the REST API and /mcp,
and identity sent as tool arguments meets every way a call comes in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core import signing
from django.test import Client, override_settings
from django.utils import timezone

from apps.gateway.executors.base import ExecutionRequest, tool_callable
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import AgentKey
from apps.tenancy.services import agent_key_issue, agent_key_revoke, agent_save, session_mint
from tests.factories import AgentFactory, TenantFactory
from tests.gateway.callables import RUNS

from .conftest import Caller, mcp_initialize
from .routes import agent_api_routes

pytestmark = pytest.mark.django_db

SEEN: list[ExecutionRequest] = []


@tool_callable("tests.security.whoami")
def whoami(request: ExecutionRequest) -> dict[str, Any]:
    """What the executor was told about who is calling: only the context, never the arguments."""
    SEEN.append(request)
    return {"tenant": request.tenant_slug, "subject": request.subject, "arguments": dict(request.arguments)}


@pytest.fixture(autouse=True)
def _forget_seen():
    SEEN.clear()


def _endpoints() -> list[tuple[str, str]]:
    """(method, path) of every agent endpoint, with ids filled in."""
    found = []
    for route in agent_api_routes():
        path = "/" + route.path.replace("<uuid:execution_id>", str(uuid.uuid4()))
        found.append(("post" if route.accepts_post else "get", path))
    return [*found, ("post", "/mcp")]


def _revoked_key(db_agent) -> str:
    issued = agent_key_issue(agent=db_agent)
    agent_key_revoke(key=issued.key, actor="test")
    return issued.secret


def _inactive_agents_key(db_agent) -> str:
    other = AgentFactory(tenant=db_agent.tenant, name="retired-bot")
    secret = agent_key_issue(agent=other).secret
    other.active = False
    agent_save(agent=other, actor="test")
    return secret


def _inactive_tenants_key(db_agent) -> str:
    other = AgentFactory(tenant=TenantFactory(slug="gone", active=False), name="gone-bot")
    return agent_key_issue(agent=other).secret


def _wrong_secret(db_agent) -> str:
    issued = agent_key_issue(agent=db_agent)
    return issued.secret[:-4] + ("AAAA" if not issued.secret.endswith("AAAA") else "BBBB")


AUTHORIZATIONS: dict[str, Callable[[Any], str | None]] = {
    "no header": lambda agent: None,
    "empty": lambda agent: "",
    "scheme only": lambda agent: "Bearer",
    "another scheme": lambda agent: "Basic dXNlcjpwYXNz",
    "not a ToolHub key": lambda agent: "Bearer sk-0123456789abcdef",
    "unknown key": lambda agent: "Bearer thk_0123456789_" + "x" * 43,
    "wrong secret": lambda agent: f"Bearer {_wrong_secret(agent)}",
    "revoked": lambda agent: f"Bearer {_revoked_key(agent)}",
    "agent deactivated": lambda agent: f"Bearer {_inactive_agents_key(agent)}",
    "tenant deactivated": lambda agent: f"Bearer {_inactive_tenants_key(agent)}",
    "8 KB of key": lambda agent: "Bearer thk_" + "a" * 8192,
    "non-ASCII": lambda agent: "Bearer thk_0123456789_\u00e9\u00e9\u00e9",
}


def _used_keys() -> set[int]:
    return set(AgentKey.objects.filter(last_used_at__isnull=False).values_list("pk", flat=True))


@pytest.mark.parametrize("authorization", AUTHORIZATIONS)
def test_every_agent_endpoint_refuses_a_bad_key_with_401(agent, recording_tools, authorization):
    header = AUTHORIZATIONS[authorization](agent)
    headers = {} if header is None else {"HTTP_AUTHORIZATION": header}
    client = Client()
    used_before = _used_keys()

    for method, path in _endpoints():
        response = getattr(client, method)(path, "{}" if method == "post" else None,
                                           content_type="application/json", **headers)

        assert response.status_code == 401, f"{method} {path}: {response.status_code}"
        assert response["WWW-Authenticate"] == 'Bearer realm="toolhub"'
        body = response.json()
        error = body["error"] if path == "/mcp" else body
        assert "Unauthorized" in error["message"] if path == "/mcp" else error["kind"] == "forbidden"
    assert not RUNS and not LedgerEntry.objects.exists()
    assert _used_keys() == used_before


def _mint(agent, *, subject: str = "u-1", ttl_s: int = 600, **claims: Any) -> str:
    """A token as POST /api/v1/sessions mints it, for `agent` unless `claims` say otherwise."""
    claims = {"tenant_id": agent.tenant_id, "agent_id": agent.pk, **claims}
    return session_mint(subject=subject, attributes={}, ttl_s=ttl_s, **claims)[0]


def _expired(agent) -> str:
    return _mint(agent, ttl_s=60, now=timezone.now() - timedelta(hours=2))


def _tampered(agent) -> str:
    """u-2's claims under the timestamp and signature of a token minted for u-1."""
    own, other = _mint(agent), _mint(agent, subject="u-2")
    return other.partition(":")[0] + ":" + own.partition(":")[2]


def _other_agents(agent) -> str:
    return _mint(agent, agent_id=AgentFactory(tenant=agent.tenant, name="sibling-bot").pk)


def _other_tenants(agent) -> str:
    stranger = AgentFactory(tenant=TenantFactory(slug="stranger"), name=agent.name)
    return _mint(agent, tenant_id=stranger.tenant_id, agent_id=stranger.pk)


def _other_secret(agent) -> str:
    with override_settings(SECRET_KEY="another-deployment-" + "k" * 40):
        return _mint(agent)


def _an_mcp_session_id(agent) -> str:
    # Signed by ToolHub too, but for another purpose (salt): not an end-user session.
    return mcp_initialize(Client(), agent_key_issue(agent=agent).secret)


def _signed_but_malformed(agent) -> str:
    return signing.dumps({"t": agent.tenant_id, "a": agent.pk}, salt="toolhub.session.v1", compress=True)


SESSIONS: dict[str, Callable[[Any], str]] = {
    "expired": _expired,
    "tampered": _tampered,
    "another agent's": _other_agents,
    "another tenant's": _other_tenants,
    "signed with another secret": _other_secret,
    "an MCP session id": _an_mcp_session_id,
    "signed but malformed": _signed_but_malformed,
    "garbage": lambda agent: "not-a-token",
    "8 KB": lambda agent: "x" * 8192,
}


@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("tool", ["finder", "plain"], ids=["tool bound to the user", "tool without bindings"])
def test_a_bad_session_token_is_forbidden_and_nothing_runs(caller, agent, publish_tool, session, tool):
    publish_tool("finder")
    publish_tool("plain", context_bindings={}, parameters={
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
        "additionalProperties": False,
    })
    caller.session = SESSIONS[session](agent)
    arguments = {"query": "orders"}

    rest = caller.post_json("/api/v1/invoke", {"task_id": "t-1", "call": {"id": "c", "name": tool,
                                                                          "arguments": arguments}}).json()
    mcp = caller.post_json("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": tool, "arguments": arguments}}).json()

    for envelope in (rest, mcp["result"]["structuredContent"]):
        assert envelope["status"] == "error"
        assert (envelope["kind"], envelope["recoverable"]) == ("forbidden", False)
        assert "POST /api/v1/sessions" in envelope["hint"]
    assert mcp["result"]["isError"] is True
    assert not RUNS and not LedgerEntry.objects.exists()


def _whoami_tool(publish_tool, **fields: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "user_id": {"type": "string"}},
        "required": ["query", "user_id"],
        "additionalProperties": True,
    }
    publish_tool("whoami", parameters=schema, executor_config={"callable": "tests.security.whoami"}, **fields)


def _through(caller: Caller, way: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call of `whoami` the way a model's call comes in; the envelope it answers."""
    text = json.dumps(arguments)
    if way == "invoke":
        call = {"id": "c", "name": "whoami", "arguments": text}
        return caller.post_json("/api/v1/invoke", {"task_id": "t-1", "call": call}).json()
    if way == "batch":
        call = {"id": "c", "name": "whoami", "arguments": text}
        body = {"task_id": "t-1", "calls": [call]}
        return caller.post_json("/api/v1/invoke/batch", body).json()["results"][0]
    if way == "openai":
        call = {"id": "c", "type": "function", "function": {"name": "whoami", "arguments": text}}
        body = {"task_id": "t-1", "message": {"role": "assistant", "tool_calls": [call]}}
        return json.loads(caller.post_json("/api/v1/adapters/openai", body).json()["messages"][0]["content"])
    if way == "anthropic":
        use = {"type": "tool_use", "id": "c", "name": "whoami", "input": arguments}
        body = {"task_id": "t-1", "message": {"role": "assistant", "content": [use]}}
        block = caller.post_json("/api/v1/adapters/anthropic", body).json()["content"][0]
        return json.loads(block["content"])
    params = {"name": "whoami", "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return caller.post_json("/mcp", body).json()["result"]["structuredContent"]


WAYS = ["invoke", "batch", "openai", "anthropic", "mcp"]


@pytest.mark.parametrize("way", WAYS)
def test_another_users_id_sent_by_the_model_is_forbidden_every_way_in(caller, publish_tool, way):
    _whoami_tool(publish_tool)

    envelope = _through(caller, way, {"query": "orders", "user_id": "u-2"})

    assert (envelope["status"], envelope["kind"]) == ("error", "forbidden")
    assert envelope["details"] == [{"path": "/user_id", "problem": "differs from the session's value"}]
    assert "u-1" not in envelope["message"] + envelope["hint"]  # the session's value is not revealed
    assert not SEEN


@pytest.mark.parametrize("way", WAYS)
def test_with_overwrite_the_sessions_user_replaces_the_models(caller, publish_tool, way):
    overwrite = {"user_id": {"source": "session.subject", "policy": "overwrite"}}
    _whoami_tool(publish_tool, context_bindings=overwrite)

    envelope = _through(caller, way, {"query": "orders", "user_id": "u-2"})

    assert envelope["status"] == "ok"
    assert [request.arguments["user_id"] for request in SEEN] == ["u-1"]
    assert [request.subject for request in SEEN] == ["u-1"]


def test_tenant_and_agent_ids_in_arguments_change_nothing(caller, agent, publish_tool):
    other = AgentFactory(tenant=TenantFactory(slug="elsewhere"), name="elsewhere-bot")
    _whoami_tool(publish_tool, side_effect="write")
    forged = {"query": "orders", "user_id": "u-1", "tenant_id": other.tenant_id, "tenant": "elsewhere",
              "agent_id": other.pk, "subject": "u-2", "session": "forged"}

    envelope = _through(caller, "invoke", forged)

    assert envelope["status"] == "ok"
    (request,) = SEEN
    assert (request.tenant_slug, request.subject) == (agent.tenant.slug, "u-1")
    entry = LedgerEntry.objects.get()
    assert (entry.tenant_id, entry.agent_id, entry.subject) == (agent.tenant_id, agent.pk, "u-1")
    assert entry.key.startswith(f"{agent.tenant.slug}/t-1/c/whoami/")
