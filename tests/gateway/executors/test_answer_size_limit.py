"""An upstream that answers 100 MB: ToolHub reads at most TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES
of any answer, on every transport (the http executor, an MCP server's JSON answers and event
streams), and says so, naming the limit; the process's memory stays bounded, and an MCP
session stays usable. A read that was cut off is an `upstream_error`; a write was sent, so
its outcome is `unknown`."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from apps.upstreams.models import Upstream
from apps.upstreams.services import upstream_save
from tests.gateway.conftest import invoke
from tests.gateway.executors.http.test_http_upstreams import PARAMETERS
from tests.gateway.mcp_tools import mcp_tool
from tests.huge_upstream import HugeUpstream, huge_upstream
from tests.mcp_upstream import READ_ONLY, mcp_upstream

pytestmark = pytest.mark.django_db

ANSWER_BYTES = 100 * 1024 * 1024
LIMIT = 1024 * 1024


@pytest.fixture
def huge(settings) -> Iterator[HugeUpstream]:
    settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = LIMIT
    with huge_upstream(ANSWER_BYTES) as running:
        yield running


def _order_tool(publish_tool, url: str, **fields) -> None:
    publish_tool("order_call", parameters=PARAMETERS, context_bindings={}, executor="http", timeout_s=30.0,
                 executor_config={"url": url, "method": "POST", "path": "/orders/{order_id}"}, **fields)


def _peak_bytes_during(call):
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _names_the_limit(body: dict) -> None:
    assert (body["status"], body.get("kind")) == ("error", "upstream_error"), body
    assert "1048576 bytes" in body["message"], body
    assert "TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES" in body["message"]


def _cut_off(body: dict, peak: int, huge: HugeUpstream, side_effect: str) -> None:
    """The model reads why, memory never held the answer, the upstream was cut off, and a
    write's outcome is unknown."""
    _names_the_limit(body)
    assert peak < 20 * LIMIT, f"peak {peak} bytes"
    assert huge.sent < ANSWER_BYTES
    entries = list(LedgerEntry.objects.values_list("state", flat=True))
    assert entries == ([LedgerState.UNKNOWN] if side_effect == "write" else [])


@pytest.mark.parametrize("side_effect", ["readonly", "write"])
def test_an_http_answer_past_the_limit_is_not_read(api, publish_tool, huge, side_effect):
    # given: a tool whose upstream answers 100 MB of JSON
    _order_tool(publish_tool, huge.url, side_effect=side_effect)

    # when
    answered, peak = _peak_bytes_during(lambda: invoke(api, "order_call", {"order_id": "o-1"}))

    # then
    _cut_off(answered.json(), peak, huge, side_effect)


def test_a_compressed_answer_counts_what_it_inflates_to(api, publish_tool, settings):
    # given: an upstream answering 100 KB of gzip that inflates to 100 MB
    settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = LIMIT
    with huge_upstream(ANSWER_BYTES, gzip=True) as bomb:
        _order_tool(publish_tool, bomb.url)

        # when
        answered, peak = _peak_bytes_during(lambda: invoke(api, "order_call", {"order_id": "o-1"}))

    # then: the limit applied to the inflated answer, and it was never inflated whole
    assert len(bomb.gzipped) < LIMIT
    _names_the_limit(answered.json())
    assert peak < 20 * LIMIT, f"peak {peak} bytes"


def test_a_compressed_answer_within_the_limit_is_read_as_usual(api, publish_tool, settings):
    # given: a gzip answer of 200 KB inflated, within the limit
    settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = LIMIT
    with huge_upstream(200 * 1024, gzip=True) as small:
        _order_tool(publish_tool, small.url, max_chars=1_000_000)

        # when
        body = invoke(api, "order_call", {"order_id": "o-1"}).json()

    # then
    assert body["status"] == "ok", body
    assert body["data"] == {"data": "x" * (200 * 1024 - len('{"data": ""}'))}


@pytest.mark.parametrize("side_effect", ["readonly", "write"])
def test_an_mcp_json_answer_past_the_limit_is_not_read(api, agent, huge, side_effect):
    # given: an MCP server whose tool answers 100 MB as application/json
    record = Upstream(tenant=agent.tenant, name="shipping", kind="mcp", base_url=huge.url + "/mcp")
    upstream_save(upstream=record, actor="test")
    mcp_tool(agent, "dump", side_effect=side_effect, timeout_s=30.0)

    # when
    answered, peak = _peak_bytes_during(lambda: invoke(api, "dump", {"shipment_id": "s-1"}))

    # then
    _cut_off(answered.json(), peak, huge, side_effect)


def test_an_mcp_event_stream_answer_past_the_limit_is_not_read(api, agent, settings):
    # given: the SDK's own server, answering in an event stream, with a tool whose text is 4 MB
    settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = 256 * 1024
    with mcp_upstream() as shipping:

        def export_manifest(shipment_id: str) -> str:
            """Every line of the shipment's manifest."""
            return "x" * (4 * 1024 * 1024)

        shipping.add_tool(export_manifest, annotations=READ_ONLY)
        record = Upstream(tenant=agent.tenant, name="shipping", kind="mcp", base_url=shipping.url)
        upstream_save(upstream=record, actor="test")
        mcp_tool(agent, "export_manifest")
        mcp_tool(agent, "track_shipment")

        # when
        body = invoke(api, "export_manifest", {"shipment_id": "s-1"}).json()
        # and the session is still good for the next call
        after = invoke(api, "track_shipment", {"shipment_id": "s-1"}, task_id="t-2").json()

    # then
    assert (body["status"], body.get("kind")) == ("error", "upstream_error"), body
    assert "262144 bytes" in body["message"] and "TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES" in body["message"]
    assert after["status"] == "ok", after
    assert shipping.initializes == 1
