"""A retried write is answered by one read of the ledger, not by a failed INSERT."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(publish_tool, session_for) -> str:
    publish_tool("cancel_thing", side_effect="write")
    return session_for("u-1")


def test_a_replay_of_a_committed_write_reads_the_ledger_once_and_writes_nothing_to_it(api, session):
    first = invoke(api, "cancel_thing", '{"query": "A"}', session=session).json()

    with CaptureQueriesContext(connection) as captured:
        replay = invoke(api, "cancel_thing", '{"query": "A"}', session=session).json()

    assert replay["cached"] is True and replay["data"] == first["data"]
    ledger_queries = [q["sql"] for q in captured.captured_queries if "ledger_" in q["sql"]]
    assert len(ledger_queries) == 1 and ledger_queries[0].startswith("SELECT")
    assert RUNS["tests.echo"] == 1


def test_a_retry_whose_entry_is_missing_is_recorded_and_run_like_a_first_call(api, session):
    invoke(api, "cancel_thing", '{"query": "A"}', session=session)
    LedgerEntry.objects.all().delete()

    retry = invoke(api, "cancel_thing", '{"query": "A"}', session=session).json()

    assert retry["status"] == "ok" and retry["cached"] is False
    assert LedgerEntry.objects.get().state == LedgerState.COMMITTED
    assert RUNS["tests.echo"] == 2
