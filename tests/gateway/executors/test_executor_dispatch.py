"""An executor never runs inside a database transaction: the intent is committed first."""

from __future__ import annotations

import pytest
from django.db import transaction

from apps.gateway.executors import execute
from apps.gateway.executors.base import ExecutionRequest
from tests.gateway.callables import RUNS


def _echo_request() -> ExecutionRequest:
    return ExecutionRequest(
        tenant_slug="acme",
        task_id="t-1",
        call_id="c-1",
        tool_name="echo",
        version_number=1,
        arguments={"text": "hi"},
        timeout_s=5,
        config={"callable": "tests.echo"},
    )


@pytest.mark.django_db
def test_an_executor_called_inside_a_transaction_is_refused_before_it_runs():
    RUNS.clear()

    with pytest.raises(AssertionError, match="inside a database transaction"), transaction.atomic():
        execute("python", _echo_request())

    assert RUNS["tests.echo"] == 0


@pytest.mark.django_db
def test_an_executor_called_outside_any_transaction_runs():
    RUNS.clear()

    assert execute("python", _echo_request()) == {"echo": {"text": "hi"}}
    assert RUNS["tests.echo"] == 1
