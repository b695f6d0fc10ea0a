import pytest

from apps.common.errors import LoopDetectedError, RateLimitedError
from apps.gateway.contracts import TaskHistory
from apps.gateway.pipeline.guards import check_loop, check_rate

from .conftest import assert_actionable


def test_repeats_below_the_loop_limit_pass(version):
    check_loop(TaskHistory(identical_calls_in_task=version.loop_limit - 1), version)


def test_the_same_call_past_the_limit_is_a_loop(version):
    with pytest.raises(LoopDetectedError) as caught:
        check_loop(TaskHistory(identical_calls_in_task=3), version)

    assert_actionable(caught.value, kind="loop_detected", recoverable=True)
    assert "already made 3 times in this task" in caught.value.message
    assert "will not change" in caught.value.hint
    assert "Change approach" in caught.value.hint


@pytest.mark.parametrize(("calls", "limit"), [(10, None), (1, 1), (60, 60)])
def test_calls_within_the_rate_limit_pass(calls, limit):
    check_rate(calls_in_window=calls, limit=limit, retry_after_s=3)


def test_calls_past_the_rate_limit_say_how_long_to_wait():
    with pytest.raises(RateLimitedError) as caught:
        check_rate(calls_in_window=61, limit=60, retry_after_s=12.4)

    envelope = assert_actionable(caught.value, kind="rate_limited", recoverable=True)
    assert envelope["retry_after_s"] == 12.4
    assert "Wait 13 s" in caught.value.hint
