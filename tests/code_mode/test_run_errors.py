"""What the model reads when a run does not finish: each limit as the error kind that fits,
with what to change, and what the code printed and called before."""

from __future__ import annotations

import pytest

from apps.gateway.executors.sandbox.executor import run_error, run_limits
from apps.gateway.executors.sandbox.runs import RunLimits, RunReport

LIMITS = RunLimits(wall_s=30, cpu_s=10, memory_mb=256, max_calls=100, max_stdout_bytes=65536)


@pytest.mark.parametrize(
    ("limit", "kind", "said"),
    [
        ("wall_s", "timeout", "30 s in all"),
        ("cpu_s", "timeout", "10 s of CPU time"),
        ("memory_mb", "invalid_args", "256 MB"),
        ("max_calls", "business_rule", "more than 100 tool calls"),
        ("max_stdout_bytes", "invalid_args", "printed more than 65536 bytes"),
        ("max_result_bytes", "invalid_args", "result is larger than"),
        ("crashed", "invalid_args", "ended abnormally"),
    ],
)
def test_each_limit_is_an_error_that_says_which(limit, kind, said):
    report = RunReport(status="limit", limit=limit, stdout="so far", calls=3, detail="killed by signal 11")

    envelope = run_error(report, LIMITS).as_envelope(call_id="run_1", tool="run_python")

    assert envelope["kind"] == kind and said in envelope["message"]
    assert envelope["raw"] == {"stdout": "so far", "calls": 3, "limit": limit}
    assert "3 tool calls" in envelope["hint"] and "do not make them again" in envelope["hint"]


def test_a_timeout_never_invites_running_the_same_code_again():
    envelope = run_error(RunReport(status="limit", limit="wall_s"), LIMITS).as_envelope()

    assert envelope["recoverable"] is False
    assert envelope["hint"].startswith("Do not run the same code again as it is")


def test_an_exception_quotes_its_last_line_and_keeps_the_traceback():
    traceback = (
        "Traceback (most recent call last):\n  File \"<code>\", line 2, in <module>\nKeyError: 'EUR'\n"
    )
    envelope = run_error(RunReport(status="error", traceback=traceback), LIMITS).as_envelope()

    assert envelope["kind"] == "invalid_args" and envelope["recoverable"] is True
    assert envelope["message"] == "The code raised an exception: KeyError: 'EUR'"
    assert envelope["raw"]["traceback"] == traceback and "no tool call" in envelope["hint"]


def test_a_version_lowers_the_limits_and_its_timeout_bounds_the_wall_time():
    limits = run_limits({"cpu_s": 2, "max_calls": 5}, timeout_s=12)

    assert (limits.cpu_s, limits.max_calls, limits.wall_s, limits.memory_mb) == (2, 5, 12, 256)
