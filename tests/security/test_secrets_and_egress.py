"""Credentials stay home (principle 19), over the invoke API: a tenant's tool never delivers
a platform secret, and no executor request reaches a host the egress policy refuses, whatever
the URL says, whatever its name resolves to, wherever a redirect points. The attacker's
endpoint is a real listener on loopback: "nothing was sent" is checked there."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.conf import settings as django_settings

from apps.catalog.models import Tool
from apps.common.catalog_generation import catalog_changed
from apps.gateway.executors.base import ExecutionRequest
from apps.gateway.executors.http.executor import reconcile_http
from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke
from tests.listeners import RecordingListener, http_response, recording_listener

pytestmark = pytest.mark.django_db

SECRET = django_settings.TOOLHUB_SECRETS["DEMO_PAYMENTS_API_KEY"]


@pytest.fixture
def listener() -> Any:
    with recording_listener() as server:
        yield server


def _assert_refused_nothing_sent(body: dict[str, Any], listener: RecordingListener) -> None:
    assert body["status"] == "error" and body["kind"] == "unavailable"
    assert body["recoverable"] is False
    assert "Nothing was sent" in body["message"]
    assert listener.connections == 0 and listener.everything_received == b""


@pytest.mark.parametrize("side_effect", ["readonly", "write"])
def test_a_tenants_tool_naming_a_platform_secret_never_delivers_it(
    api, agent, publish_tool, session_for, listener, side_effect, django_capture_on_commit_callbacks
):
    # given: a platform tool that sends the secret to the listener (the platform may)...
    version = publish_tool(
        "steal", executor="http", side_effect=side_effect,
        executor_config={"url": listener.url, "path": "/steal", "secret_ref": "DEMO_PAYMENTS_API_KEY"},
    )
    session = session_for("u-1")
    control = invoke(api, "steal", {"query": "a"}, session=session, call_id="control").json()
    assert control["status"] == "ok" and SECRET.encode() in listener.everything_received
    listener.received.clear()
    listener.connections = 0
    # ...then the row is handed to a tenant, whose curators choose where it points. The
    # services refuse that (test_platform_secrets.py); the executor must refuse it too, for a
    # row changed some other way (SQL, an earlier release).
    Tool.objects.filter(pk=version.tool_id).update(tenant=agent.tenant)
    with django_capture_on_commit_callbacks(execute=True):
        catalog_changed()

    # when
    body = invoke(api, "steal", {"query": "a"}, session=session, call_id="stolen").json()

    # then
    _assert_refused_nothing_sent(body, listener)
    assert "only shared-catalog tools may use" in body["message"]
    if side_effect == "write":
        assert LedgerEntry.objects.get(call_id="stolen").state == LedgerState.FAILED


def test_a_loopback_url_is_refused_at_call_time_and_the_write_is_failed(
    api, publish_tool, session_for, listener, settings
):
    # given: the policy of a deployment that allows nothing private
    settings.TOOLHUB_EGRESS_ALLOW = []
    publish_tool(
        "pay_out", executor="http", side_effect="write",
        executor_config={"url": listener.url, "path": "/payouts"},
    )

    # when
    body = invoke(api, "pay_out", {"query": "a"}, session=session_for("u-1")).json()

    # then
    _assert_refused_nothing_sent(body, listener)
    assert f"127.0.0.1:{listener.port} is a loopback address" in body["message"]
    assert "TOOLHUB_EGRESS_ALLOW" in body["message"] and "operator" in body["hint"]
    assert LedgerEntry.objects.get().state == LedgerState.FAILED


def test_a_strict_allowlist_refuses_what_it_does_not_name(api, publish_tool, session_for, listener, settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1:1"]
    settings.TOOLHUB_EGRESS_PUBLIC = False
    publish_tool("look_up", executor="http", executor_config={"url": listener.url})

    body = invoke(api, "look_up", {"query": "a"}, session=session_for("u-1")).json()

    _assert_refused_nothing_sent(body, listener)


@pytest.fixture
def rebinding_dns(monkeypatch) -> None:
    """`rebind.test` resolves to loopback, as a hostile DNS answers once the URL was accepted."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == "rebind.test" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_that_resolves_to_loopback_is_refused_at_connect_time(
    api, publish_tool, session_for, listener, settings, rebinding_dns
):
    # given: a public-looking name, accepted as written
    settings.TOOLHUB_EGRESS_ALLOW = []
    publish_tool("look_up", executor="http", executor_config={"url": f"http://rebind.test:{listener.port}"})

    # when
    body = invoke(api, "look_up", {"query": "a"}, session=session_for("u-1")).json()

    # then: the address it resolved to is what was checked
    _assert_refused_nothing_sent(body, listener)
    assert f"rebind.test:{listener.port} (127.0.0.1) is a loopback address" in body["message"]


def test_the_checked_address_is_the_one_connected_to_and_the_host_header_is_kept(
    api, publish_tool, session_for, listener, settings, rebinding_dns
):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1:*"]
    publish_tool("look_up", executor="http", executor_config={"url": f"http://rebind.test:{listener.port}"})

    body = invoke(api, "look_up", {"query": "a"}, session=session_for("u-1")).json()

    assert body["status"] == "ok"
    assert f"host: rebind.test:{listener.port}".encode() in listener.everything_received.lower()


def test_a_redirect_is_not_followed(api, publish_tool, session_for):
    # given: an allowed upstream that redirects to another (the attacker's) endpoint
    with recording_listener() as target, recording_listener(
        http_response("302 Found", b"", headers="Location: {url}/steal\r\n")
    ) as redirecting:
        redirecting.response = redirecting.response.replace(b"{url}", target.url.encode())
        publish_tool("look_up", executor="http", executor_config={"url": redirecting.url})

        # when
        body = invoke(api, "look_up", {"query": "a"}, session=session_for("u-1")).json()

    # then
    assert body["status"] == "error"
    assert redirecting.connections == 1
    assert target.connections == 0


def test_reconciliation_never_asks_a_refused_host(listener, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    request = ExecutionRequest(
        tenant_slug="acme", task_id="t-1", call_id="call_1", tool_name="pay_out", version_number=1,
        arguments={}, timeout_s=2.0, config={"url": listener.url, "status_path": "/status"},
        idempotency_key="acme/t-1/call_1/pay_out/h", platform_owned=True,
    )

    answer = reconcile_http(request)

    assert answer.found is None and answer.retry is False
    assert "egress policy" in answer.note and "loopback" in answer.note
    assert listener.connections == 0
