"""The warm pool: runs are served by sandboxes started before them, each used once and
replaced; a pool with none warm starts each run's own; a forked process makes its own."""

from __future__ import annotations

import os
import statistics
import time

from django.test import override_settings

from apps.gateway.executors.sandbox.pool import stop_pool, warm_pool
from apps.gateway.executors.sandbox.runs import RunLimits, prewarm_sandboxes, run_code

from .conftest import FAST, FakeToolHub, run

WAIT_S = 15.0


def _timed_run() -> float:
    started = time.monotonic()
    report = run("result = 1")
    assert report.result == 1
    return time.monotonic() - started


def test_a_run_takes_a_warm_sandbox_and_the_pool_starts_another():
    run("result = 1")
    pool = warm_pool()
    assert pool.wait_filled(FAST.spawn(), timeout_s=WAIT_S)
    served, cold = pool.served_warm, pool.started_cold

    report = run("import os\nresult = os.listdir('.')")

    assert (report.status, report.result) == ("ok", [])
    assert (pool.served_warm, pool.started_cold) == (served + 1, cold)
    assert pool.wait_filled(FAST.spawn(), timeout_s=WAIT_S)
    assert pool.warm_count(FAST.spawn()) == 2


def test_warm_runs_start_faster_than_cold_ones():
    warm = []
    run("result = 1")
    for _ in range(5):
        assert warm_pool().wait_filled(FAST.spawn(), timeout_s=WAIT_S)
        warm.append(_timed_run())
    with override_settings(TOOLHUB_SANDBOX_WARM=0):
        stop_pool()
        cold = [_timed_run() for _ in range(5)]
        assert warm_pool().served_warm == 0
        assert warm_pool().started_cold == 5
        stop_pool()

    assert statistics.median(warm) < statistics.median(cold)


def test_other_limits_get_a_sandbox_of_their_own():
    pool = warm_pool()
    cold = pool.started_cold

    report = run("result = 2", memory_mb=200)

    assert report.result == 2
    assert pool.started_cold == cold + 1


def test_a_stopped_pool_leaves_no_sandbox_and_the_next_run_makes_a_new_one(sandbox_scratch):
    run("result = 1")
    assert warm_pool().wait_filled(FAST.spawn(), timeout_s=WAIT_S)
    old = warm_pool()

    stop_pool()

    assert list(sandbox_scratch.iterdir()) == []
    assert run("result = 3").result == 3
    assert warm_pool() is not old


def test_a_forked_child_makes_its_own_pool():
    run("result = 1")
    parent = warm_pool()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        # The child: never back into pytest.
        outcome = b"fail"
        try:
            os.close(read_end)
            report = run("result = 'child'")
            if report.result == "child" and warm_pool() is not parent and warm_pool().pid == os.getpid():
                outcome = b"ok"
            stop_pool()
        finally:
            os.write(write_end, outcome)
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        answer = reader.read()
    os.waitpid(pid, 0)

    assert answer == b"ok"
    assert run("result = 'parent'").result == "parent"
    assert warm_pool() is parent


def test_a_worker_process_starts_its_sandboxes_before_its_first_run():
    stop_pool()
    prewarm_sandboxes()

    assert warm_pool().wait_filled(RunLimits().spawn(), timeout_s=10)
    report = run_code("result = 1", tool_names=(), limits=RunLimits(), call_tool=FakeToolHub())

    assert report.result == 1 and warm_pool().served_warm == 1 and warm_pool().started_cold == 0
