"""A write whose request could not even be sent is `failed`, not `unknown`.

Issue 11, item 8: a version whose URL has no scheme (or any request that fails before
sending) was recorded as ambiguous and reconciled, although nothing can have happened.
"""

from __future__ import annotations

import pytest

from apps.ledger.models import LedgerEntry, LedgerState
from tests.gateway.conftest import invoke

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("config", "task_id", "kind"),
    [
        # The egress policy refuses a URL without a host before connecting: the tool cannot
        # run as configured, which is `unavailable`.
        pytest.param(
            {"url_setting": "PAYOUTS_URL"}, "t-1", "unavailable", id="a URL setting without a scheme"
        ),
        pytest.param({"url": "http://[::1/api"}, "t-1", "upstream_error", id="a URL httpx cannot parse"),
        pytest.param({"url": "http://127.0.0.1:9"}, "t-1", "upstream_error", id="a connection refused"),
    ],
)
def test_a_write_that_never_left_is_failed_and_says_nothing_was_sent(
    api, publish_tool, session_for, settings, config, task_id, kind
):
    # given: an operator set the upstream's address without http://
    settings.PAYOUTS_URL = "127.0.0.1:9/api"
    publish_tool(
        "pay_out", side_effect="write", executor="http", executor_config={**config, "path": "/payouts"}
    )
    session = session_for("u-1")

    # when
    first = invoke(api, "pay_out", '{"query": "a"}', session=session, task_id=task_id)
    again = invoke(api, "pay_out", '{"query": "a"}', session=session, task_id=task_id)

    # then: a definite failure, said as such, and nothing for reconciliation to check
    body = first.json()
    assert first.status_code == 200
    assert (body["status"], body["kind"], body["recoverable"]) == ("error", kind, False)
    assert "nothing was sent" in body["message"].lower() and "Do not call again" not in body["hint"]
    entry = LedgerEntry.objects.get()
    assert entry.state == LedgerState.FAILED
    assert entry.next_check_at is None and entry.triage_since is None
    assert again.json()["kind"] == kind and again.json()["cached"] is True
