"""An upstream credential sent in the query string never reaches a log record: not httpx's
or httpx2's line per request, not the MCP SDK's own lines, at any level, whatever the
parameter is called. Checked on the records as logged (before any handler or formatter)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from apps.common.logs import JsonFormatter
from apps.upstreams.models import Upstream
from apps.upstreams.services import credential_set, upstream_save
from tests.gateway.conftest import invoke
from tests.gateway.executors.http.test_http_upstreams import tenant_tool
from tests.gateway.mcp_tools import mcp_tool
from tests.http_upstream import http_upstream
from tests.mcp_upstream import McpUpstream, mcp_upstream

pytestmark = pytest.mark.django_db

SECRET = "qk-5f8e1d2c3b4a-query-secret"


@pytest.fixture
def shipping() -> Iterator[McpUpstream]:
    with mcp_upstream() as running:
        yield running


def _query_credential(agent, url: str, *, kind: str, parameter: str) -> None:
    credential = credential_set(tenant=agent.tenant, name="shipping-key", kind="query", field=parameter,
                                value=SECRET, per_subject=False, actor="test")
    upstream_save(upstream=Upstream(tenant=agent.tenant, name="shipping", kind=kind, base_url=url,
                                    credential=credential), actor="test")


def _leaks(caplog: pytest.LogCaptureFixture) -> list[str]:
    formatter = JsonFormatter()
    return [f"{record.name}: {record.getMessage()}" for record in caplog.records
            if SECRET in record.getMessage() or SECRET in formatter.format(record)]


@pytest.mark.parametrize("parameter", ["key", "x-shipping-auth"])
def test_an_mcp_servers_query_credential_is_in_no_log_record(api, agent, shipping, caplog, parameter):
    # given: an MCP server authenticated by a query parameter, and every logger at DEBUG
    _query_credential(agent, shipping.url, kind="mcp", parameter=parameter)
    mcp_tool(agent, "track_shipment")
    caplog.set_level(logging.DEBUG)

    # when
    body = invoke(api, "track_shipment", {"shipment_id": "s-1"}).json()

    # then: the call worked, its requests were logged, and never with the value
    assert body["status"] == "ok", body
    requests = [record for record in caplog.records if record.name == "httpx2"]
    assert requests and all(f"{parameter}=[redacted]" in record.getMessage() for record in requests)
    assert _leaks(caplog) == []


def test_an_http_apis_query_credential_is_in_no_log_record(api, agent, caplog):
    # given
    with http_upstream() as orders:
        _query_credential(agent, orders.url, kind="http", parameter="sig")
        tenant_tool(agent, upstream="shipping")
        caplog.set_level(logging.DEBUG)

        # when
        body = invoke(api, "order_lookup", {"order_id": "o-1"}).json()

    # then
    assert body["status"] == "ok", body
    assert any("sig=[redacted]" in record.getMessage() for record in caplog.records)
    assert _leaks(caplog) == []


def test_the_formatter_hides_credential_parameters_in_any_line(caplog):
    # given: code that logs a URL as text, with credentials in usual parameter names
    logger = logging.getLogger("tests.careless")
    caplog.set_level(logging.INFO)

    # when
    logger.warning("retrying https://api.example/v1?api_key=%s&page=2&access_token=%s&signature=%s",
                   SECRET, SECRET, SECRET)

    # then: the values are gone, the rest stays
    line = JsonFormatter().format(caplog.records[-1])
    assert SECRET not in line
    assert "api_key=[redacted]&page=2&access_token=[redacted]&signature=[redacted]" in line
