"""Sessions opened when a serving process starts: the MCP upstreams that published, granted
tools call get their session before the first call needs it, within TOOLHUB_MCP_WARM_S, and an
upstream that is down or slow is logged, never a failed or stalled start."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

import toolhub.celery
from apps.catalog.models import Tool
from apps.gateway import outbound
from apps.gateway.outbound import mcp_sessions_warm
from apps.tenancy import authentication
from apps.tenancy.models import Grant
from tests.factories import SubjectCredentialFactory, UpstreamFactory
from tests.gateway.conftest import invoke
from tests.gateway.mcp_tools import mcp_tool
from tests.gunicorn_conf import gunicorn_conf
from tests.listeners import open_connections_to
from tests.mcp_upstream import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def warm_log(caplog) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="toolhub.egress")
    return caplog


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if "at start" in record.getMessage()]


def _counts(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Each line without its duration."""
    return [line.split(" in ")[0] for line in _lines(caplog)]


def test_a_granted_tools_upstream_has_its_session_before_the_first_call(
    api, agent, shipping, shipping_upstream, warm_log
):
    # given: a published, granted tool of the shipping server
    mcp_tool(agent, "track_shipment")

    # when: the process starts
    mcp_sessions_warm()

    # then: the handshake happened then, and the first call reuses that session and its
    # connections
    assert shipping.initializes == 1
    port = int(urlsplit(shipping.url).port or 0)
    connections = open_connections_to(port)
    body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()
    assert body["status"] == "ok"
    assert shipping.initializes == 1
    assert open_connections_to(port) == connections
    assert _counts(warm_log) == ["MCP sessions opened at start: 1, 0 skipped,"]


def test_a_shared_tools_upstream_gets_a_session_per_calling_tenant(api, agent, shipping, warm_log):
    # given: a shared tool calling the platform's shipping server, granted to acme
    UpstreamFactory(shipping=True, platform=True, base_url=shipping.url)
    mcp_tool(agent, "track_shipment")
    Tool.objects.filter(name="track_shipment").update(tenant=None)

    # when
    mcp_sessions_warm()

    # then: acme's session with the platform's server, reused by acme's first call
    assert shipping.initializes == 1
    assert invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()["status"] == "ok"
    assert shipping.initializes == 1


def test_an_upstream_no_granted_tool_calls_gets_no_session(api, agent, shipping, shipping_upstream):
    # given: the tool's grant is gone
    mcp_tool(agent, "track_shipment")
    Grant.objects.all().delete()

    # when
    mcp_sessions_warm()

    # then
    assert shipping.initializes == 0


def test_an_upstream_of_per_user_tokens_is_left_to_its_first_call(api, agent, shipping, warm_log):
    # given: a key that is each end user's own: no session without a user
    upstream = UpstreamFactory(
        shipping=True, tenant=agent.tenant, base_url=shipping.url, credential__per_subject=True
    )
    SubjectCredentialFactory(credential=upstream.credential, agent=agent, subject="u-1")
    mcp_tool(agent, "track_shipment")

    # when
    mcp_sessions_warm()

    # then
    assert shipping.initializes == 0
    assert _counts(warm_log) == ["MCP sessions opened at start: 0, 1 skipped,"]


def test_an_upstream_that_is_down_is_logged_and_its_call_still_fails_as_before(api, agent, warm_log):
    # given: nothing listens at the upstream's URL
    UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=f"http://127.0.0.1:{free_port()}/mcp")
    mcp_tool(agent, "schedule_pickup", side_effect="write")

    # when
    started = time.monotonic()
    mcp_sessions_warm()

    # then: at once, a warning naming the upstream; the call is refused with nothing sent
    assert time.monotonic() - started < 2
    [line] = _lines(warm_log)
    assert "0, 0 skipped, 1 not opened (shipping: ConnectError)" in line
    assert [r.levelname for r in warm_log.records if "at start" in r.getMessage()] == ["WARNING"]
    body = invoke(api, "schedule_pickup", {"shipment_id": "s-1"}).json()
    assert body["status"] == "error" and "nothing was sent" in body["message"]


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers: a server hung at start."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"


def test_an_upstream_that_does_not_answer_delays_nothing_past_the_bound(
    api, agent, silent_server, settings, warm_log
):
    # given
    settings.TOOLHUB_MCP_WARM_S = 0.3
    UpstreamFactory(shipping=True, tenant=agent.tenant, base_url=silent_server)
    mcp_tool(agent, "track_shipment")

    # when
    started = time.monotonic()
    mcp_sessions_warm()

    # then
    assert time.monotonic() - started < 1.5
    [line] = _lines(warm_log)
    assert "1 not opened (shipping: no session within 0.3 s)" in line


def test_no_session_is_opened_when_warming_is_off(api, agent, shipping, shipping_upstream, settings):
    settings.TOOLHUB_MCP_WARM_S = 0
    mcp_tool(agent, "track_shipment")

    mcp_sessions_warm()

    assert shipping.initializes == 0


def test_web_and_worker_processes_warm_up_on_start(monkeypatch, tmp_path):
    # given: gunicorn's configuration, read without making a metrics directory of its own
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    started: list[str] = []

    def warm_soon() -> threading.Thread:
        started.append("warm")
        thread = threading.Thread(target=lambda: None)
        thread.start()
        return thread

    monkeypatch.setattr(outbound, "mcp_sessions_warm_soon", warm_soon)
    monkeypatch.setattr(outbound, "agent_catalogs_warm", lambda: started.append("catalogs"))
    monkeypatch.setattr(authentication, "agent_keys_warm", lambda: started.append("keys"))
    monkeypatch.setattr(outbound, "code_runs_warm_soon", lambda: started.append("sandboxes"))
    conf = gunicorn_conf()

    # when: a gunicorn worker has loaded the application; a Celery worker process was forked
    conf.post_worker_init(worker=None)
    toolhub.celery._warm_up()

    # then: code runs execute on the workers only, so only they start sandboxes ahead; agents
    # call the web processes, which load their catalogs and keys before serving
    assert started == ["warm", "catalogs", "keys", "warm", "sandboxes"]
