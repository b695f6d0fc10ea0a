"""Code mode's runs as a model sees them: the result, what it printed, its tool calls answered
by ToolHub (a fake `call_tool` here), and its errors with its own line numbers."""

from __future__ import annotations

import pytest
from django.test import override_settings

from apps.gateway.executors.sandbox import process
from apps.gateway.executors.sandbox.pool import stop_pool, warm_pool
from apps.gateway.executors.sandbox.runs import SandboxUnavailable

from .conftest import FakeToolHub, run


def test_a_run_returns_the_global_result_and_what_the_code_printed():
    report = run("total = sum(range(10))\nprint('total is', total)\nresult = {'total': total, 'ok': True}")

    assert report.status == "ok"
    assert report.result == {"total": 45, "ok": True}
    assert report.stdout == "total is 45\n"
    assert report.calls == 0
    assert report.traceback == report.limit == ""


def test_a_run_without_result_returns_none_and_prints_to_stderr_are_captured_too():
    report = run("import sys\nprint('to stderr', file=sys.stderr)")

    assert report.status == "ok"
    assert report.result is None
    assert report.stdout == "to stderr\n"


def test_tool_calls_get_data_raw_or_an_exception_from_the_envelope():
    hub = FakeToolHub(answers={
        "search_orders": {"status": "ok", "data": [{"id": "ord-1"}]},
        "find_customer": {"status": "empty", "raw": [], "message": "No matching records."},
        "get_order": {"status": "error", "kind": "not_found", "message": "No order ord-9.",
                      "hint": "Search for the order first."},
        "refund_payment": {"status": "pending_approval", "execution_id": "ex-7"},
    })
    code = """
orders = tools.search_orders(status="paid", limit=100)
customers = tools.find_customer(email="a@example.com", call_id="c-2")
try:
    tools.get_order(order_id="ord-9")
except ToolCallError as error:
    failed = [str(error), error.envelope["kind"]]
try:
    tools.refund_payment(order_id="ord-1")
except ToolCallPending as pending:
    waiting = [pending.envelope["status"], pending.envelope["execution_id"]]
result = {"orders": orders, "customers": customers, "failed": failed, "waiting": waiting}
"""
    report = run(code, hub=hub, tools=("search_orders", "find_customer", "get_order", "refund_payment"))

    assert report.status == "ok", report
    assert report.result == {
        "orders": [{"id": "ord-1"}],
        "customers": [],
        "failed": ["not_found: No order ord-9. (hint: Search for the order first.)", "not_found"],
        "waiting": ["pending_approval", "ex-7"],
    }
    assert report.calls == 4
    assert [(c.number, c.tool, c.arguments, c.call_id) for c in hub.calls] == [
        (1, "search_orders", {"status": "paid", "limit": 100}, None),
        (2, "find_customer", {"email": "a@example.com"}, "c-2"),
        (3, "get_order", {"order_id": "ord-9"}, None),
        (4, "refund_payment", {"order_id": "ord-1"}, None),
    ]


def test_an_accepted_call_raises_tool_call_pending():
    hub = FakeToolHub(answers={"search_orders": {"status": "accepted", "execution_id": "ex-1"}})

    report = run("tools.search_orders(status='paid')", hub=hub)

    assert report.status == "error"
    assert report.traceback.splitlines()[-1].startswith("ToolCallPending: accepted: the call was accepted")


def test_positional_arguments_and_unknown_tools_are_clear_errors_and_send_nothing():
    hub = FakeToolHub()

    positional = run("tools.search_orders('paid')", hub=hub)
    unknown = run("tools.delete_everything()", hub=hub)

    assert positional.traceback.splitlines()[-1] == (
        "TypeError: tools.search_orders() takes keyword arguments only, e.g. "
        "tools.search_orders(name=value); it was given 1 positional argument(s)")
    assert unknown.traceback.splitlines()[-1] == (
        "AttributeError: there is no tool 'delete_everything'; the tools are: search_orders")
    assert hub.calls == []


def test_an_exception_shows_the_codes_own_frames_and_lines_and_no_runner_frame():
    code = ("def total(orders):\n    return sum(o['amount'] for o in orders)\n\n"
            "result = total([{'amount': 1}, {}])\n")

    report = run(code)

    assert report.status == "error"
    assert report.traceback == (
        "Traceback (most recent call last):\n"
        '  File "<code>", line 4, in <module>\n'
        "    result = total([{'amount': 1}, {}])\n"
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "<code>", line 2, in total\n'
        "    return sum(o['amount'] for o in orders)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "<code>", line 2, in <genexpr>\n'
        "    return sum(o['amount'] for o in orders)\n"
        "               ~^^^^^^^^^^\n"
        "KeyError: 'amount'\n"
    )
    assert report.detail == "The code raised KeyError."


def test_a_failed_tool_call_shows_the_calling_line_not_the_runner():
    hub = FakeToolHub(answers={"search_orders": {"status": "error", "kind": "forbidden", "message": "No."}})

    report = run("x = 1\ntools.search_orders(status='paid')\n", hub=hub)

    assert report.traceback == (
        'Traceback (most recent call last):\n  File "<code>", line 2, in <module>\n'
        "    tools.search_orders(status='paid')\nToolCallError: forbidden: No.\n"
    )
    assert "runner" not in report.traceback and "<string>" not in report.traceback


def test_a_syntax_error_points_at_the_codes_line():
    report = run("x = 1\ny = = 2\n")

    assert report.status == "error"
    assert 'File "<code>", line 2' in report.traceback
    assert report.traceback.splitlines()[-1] == "SyntaxError: invalid syntax"


def test_a_result_that_is_not_json_is_an_error_that_says_so():
    report = run("result = {1, 2}")

    assert report.status == "error"
    assert report.detail.startswith("`result` must be a JSON value")
    assert "set is not JSON serializable" in report.detail


def test_a_result_over_its_bound_is_the_max_result_bytes_limit():
    report = run("result = 'x' * 5000", max_result_bytes=1000)

    assert (report.status, report.limit, report.result) == ("limit", "max_result_bytes", None)
    assert report.detail == "`result` takes 5002 bytes as JSON, more than 1000."


def test_a_failure_of_call_tool_is_raised_and_the_sandbox_is_stopped(sandbox_scratch):
    class Broken(FakeToolHub):
        def __call__(self, call):
            raise RuntimeError("the database is gone")

    with pytest.raises(RuntimeError, match="the database is gone"):
        run("tools.search_orders(status='paid')\nopen('left-behind', 'w')", hub=Broken())

    assert not list(sandbox_scratch.rglob("left-behind"))


def test_without_bwrap_a_run_raises_sandbox_unavailable(monkeypatch):
    monkeypatch.setattr(process, "BWRAP", "/nonexistent/bwrap")
    with override_settings(TOOLHUB_SANDBOX_WARM=0):
        stop_pool()
        try:
            with pytest.raises(SandboxUnavailable, match="code mode needs bubblewrap"):
                run("result = 1")
            assert warm_pool().started_cold == 1
        finally:
            stop_pool()
