"""No two (task, call) pairs share an idempotency key, whatever characters the ids hold.

Issue 11, item 3: task `a/b` with call `c` and task `a` with call `b/c` built the same key,
and the second call answered 500.
"""

from __future__ import annotations

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.callables import RUNS
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("first", "second"),
    [(("a/b", "c"), ("a", "b/c")), (("a%2Fb", "c"), ("a/b", "c")), (("a:b", "c"), ("a", "b:c"))],
)
def test_two_calls_whose_ids_join_alike_are_two_calls(api, publish_tool, session_for, first, second):
    # given
    publish_tool("cancel_thing", side_effect="write")
    session = session_for("u-1")

    # when
    answers = [
        invoke(api, "cancel_thing", '{"query": "A"}', session=session, task_id=task_id, call_id=call_id)
        for task_id, call_id in (first, second)
    ]

    # then: each answered with a result of its own
    assert [a.status_code for a in answers] == [200, 200]
    assert [(a.json()["status"], a.json()["call_id"], a.json()["cached"]) for a in answers] == [
        ("ok", first[1], False),
        ("ok", second[1], False),
    ]
    assert RUNS["tests.echo"] == 2
    entries = LedgerEntry.objects.order_by("created_at")
    assert [(e.task_id, e.call_id, e.state) for e in entries] == [
        (*first, LedgerState.COMMITTED),
        (*second, LedgerState.COMMITTED),
    ]
    assert entries[0].key != entries[1].key


def test_the_key_encodes_each_part_so_a_slash_only_separates_parts(api, publish_tool, session_for):
    publish_tool("cancel_thing", side_effect="write")

    invoke(api, "cancel_thing", '{"query": "A"}', session=session_for("u-1"), task_id="a/b%", call_id="c")

    entry = LedgerEntry.objects.get()
    assert entry.key == f"acme/a%2Fb%25/c/cancel_thing/{entry.args_hash}"


def test_a_call_whose_ids_join_like_another_tasks_call_is_still_checked_for_loops(
    api, publish_tool, session_for
):
    # given: the loop guard allows two identical calls per task; task "a" has made them
    publish_tool("lookup", loop_limit=2)
    session = session_for("u-1")
    invoke(api, "lookup", '{"query": "x"}', session=session, task_id="a:b", call_id="c")
    for call_id in ("c1", "c2"):
        assert invoke(api, "lookup", '{"query": "x"}', session=session, task_id="a", call_id=call_id).json()[
            "status"
        ] == "ok"

    # when: a third one in task "a", with an id that joins like task "a:b"'s call "c"
    third = invoke(api, "lookup", '{"query": "x"}', session=session, task_id="a", call_id="b:c").json()

    # then: it is a new call, not a retry of another task's
    assert third["kind"] == "loop_detected"


@pytest.mark.filterwarnings("error::django.core.cache.backends.base.CacheKeyWarning")
def test_long_task_and_call_ids_keep_the_guards_working_within_any_caches_key_limit(
    api, publish_tool, session_for
):
    # given: ids as long as the API takes (200 characters: some frameworks chain UUIDs)
    publish_tool("lookup", loop_limit=2)
    session = session_for("u-1")
    task_id = "trace/" + "x" * 194

    # when: the loop guard's limit is reached with them, and one is sent again
    answers = [
        invoke(api, "lookup", '{"query": "x"}', session=session, task_id=task_id, call_id=call_id).json()
        for call_id in ("call/" + "a" * 195, "call/" + "b" * 195, "call/" + "b" * 195, "call/" + "c" * 195)
    ]

    # then: no key too long for a cache; the retry is not counted again, a third new call is
    assert [a.get("status") for a in answers[:3]] == ["ok", "ok", "ok"]
    assert answers[3]["kind"] == "loop_detected"
