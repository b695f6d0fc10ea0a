"""GET /metrics: invocation counters, stage latencies, ledger and queue gauges, protection."""

from __future__ import annotations

import math
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke


def scrape(client, **headers) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_calls_are_counted_by_tool_status_and_kind_with_each_stage_timed(
    client, api, publish_tool, session_for
):
    publish_tool("lookup")
    session = session_for("u-1")
    before = scrape(client)

    invoke(api, "lookup", {"query": "a"}, session=session, call_id="c1")
    invoke(api, "lookup", {"query": 5}, session=session, call_id="c2")
    invoke(api, "made_up_tool_name_1234", {"query": "a"}, session=session, call_id="c3")
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("toolhub_invocations_total", tool="lookup", status="ok", kind="") == 1
    assert delta("toolhub_invocations_total", tool="lookup", status="error", kind="invalid_args") == 1
    # A name the model made up is not a label of its own: labels must stay a bounded set.
    assert delta("toolhub_invocations_total", tool="(unknown)", status="error", kind="unknown_tool") == 1
    assert not any("made_up_tool_name_1234" in str(labels) for _, labels in after)
    assert delta("toolhub_invoke_stage_seconds_count", stage="validation") == 3
    assert delta("toolhub_invoke_stage_seconds_count", stage="execution") == 1
    assert delta("toolhub_invoke_stage_seconds_count", stage="shaping") == 3
    assert delta("toolhub_invoke_stage_seconds_count", stage="call") == 3
    assert delta("toolhub_invoke_stage_seconds_sum", stage="call") > 0


def _entry(agent, version, n: int, **fields) -> LedgerEntry:
    return LedgerEntry.objects.create(
        tenant=agent.tenant,
        agent=agent,
        key=f"k-{n}",
        task_id="t",
        call_id=f"c{n}",
        tool=version.tool,
        version=version,
        args_hash="h",
        arguments={},
        **fields,
    )


def test_ledger_states_and_the_triage_queue_are_counted_in_a_fixed_number_of_queries(
    client, agent, publish_tool, django_assert_max_num_queries
):
    version = publish_tool("refund_thing", side_effect="write")
    now = timezone.now()
    for n in range(20):
        _entry(agent, version, n, state=LedgerState.COMMITTED)
    _entry(agent, version, 20, state=LedgerState.INTENT)
    _entry(agent, version, 21, state=LedgerState.UNKNOWN)
    _entry(agent, version, 22, state=LedgerState.UNKNOWN, triage_since=now - timedelta(seconds=120))
    _entry(agent, version, 23, state=LedgerState.UNKNOWN, triage_since=now - timedelta(seconds=30))

    # However many rows: a savepoint, SET LOCAL statement_timeout, two aggregates, release;
    # then the drift gauge's savepoint, SET LOCAL, one aggregate, release.
    with django_assert_max_num_queries(9):
        samples = scrape(client)

    assert value(samples, "toolhub_ledger_entries", state="committed") == 20
    assert value(samples, "toolhub_ledger_entries", state="intent") == 1
    assert value(samples, "toolhub_ledger_entries", state="unknown") == 3
    assert ("toolhub_ledger_entries", frozenset({("state", "failed")})) in samples
    assert value(samples, "toolhub_triage_queue_size") == 2
    assert 120 <= value(samples, "toolhub_triage_oldest_age_seconds") < 180


def test_an_empty_triage_queue_has_no_age(client, db):
    samples = scrape(client)

    assert value(samples, "toolhub_triage_queue_size") == 0
    assert ("toolhub_triage_oldest_age_seconds", frozenset()) in samples
    assert value(samples, "toolhub_triage_oldest_age_seconds") == 0


def test_the_celery_queue_depth_is_read_from_the_broker(client, db, monkeypatch):
    from toolhub.celery import app

    # A queue of the test's own: the suite's Celery worker consumes the default one.
    queue = "toolhub-test-metrics"
    monkeypatch.setitem(app.conf, "task_default_queue", queue)
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)
        with app.producer_or_acquire() as producer:
            for _ in range(3):
                app.send_task("tests.ops.never_consumed", queue=queue, producer=producer)

        depth = value(scrape(client), "toolhub_celery_queue_length", queue=queue)
        conn.default_channel.queue_purge(queue)

    assert depth == 3


def test_a_broker_that_does_not_answer_leaves_a_nan_and_the_scrape_succeeds(client, db, broker_down):
    started = time.monotonic()

    depth = value(scrape(client), "toolhub_celery_queue_length", queue="celery")

    assert math.isnan(depth) and time.monotonic() - started < 3


def test_a_database_that_does_not_answer_leaves_the_ledger_out_and_the_scrape_succeeds(
    client, db, monkeypatch
):
    def down() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr("apps.ledger.metrics.ledger_state_counts", down)

    samples = scrape(client)

    assert not any(name.startswith(("toolhub_ledger", "toolhub_triage")) for name, _ in samples)
    assert ("toolhub_celery_queue_length", frozenset({("queue", "celery")})) in samples


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "metrics-token-123"])
def test_with_a_token_set_a_scrape_without_it_is_refused(client, db, settings, authorization):
    settings.TOOLHUB_METRICS_TOKEN = "metrics-token-123"
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    response = client.get("/metrics", **headers)

    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"toolhub_" not in response.content


def test_with_a_token_set_a_scrape_with_it_is_served(client, db, settings):
    settings.TOOLHUB_METRICS_TOKEN = "metrics-token-123"

    samples = scrape(client, HTTP_AUTHORIZATION="Bearer metrics-token-123")

    assert ("toolhub_triage_queue_size", frozenset()) in samples


def test_requests_refused_at_the_door_are_counted_by_status_and_kind(client, api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    before = scrape(client)

    client.post("/api/v1/invoke", {"task_id": "t"}, content_type="application/json")
    client.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, content_type="application/json")
    api.post("/api/v1/invoke", {"task_id": "t", "padding": "x" * 2_000}, format="json")
    api.post("/api/v1/invoke", {"task_id": "t"}, format="json")
    after = scrape(client)

    def delta(**labels: str) -> float:
        name = "toolhub_refusals_total"
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta(status="401", kind="forbidden") == 2  # the REST API and MCP
    assert delta(status="413", kind="invalid_args") == 1
    assert delta(status="400", kind="invalid_args") == 1  # an envelope without its call
