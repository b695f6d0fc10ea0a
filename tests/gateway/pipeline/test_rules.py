import pytest

from apps.common.errors import BusinessRuleError, InvalidArgsError, UnavailableError
from apps.gateway.contracts import CallState, StateLimit, TaskHistory
from apps.gateway.pipeline.rules import (
    HistoryNeeds,
    business_rule,
    check_argument_rules,
    check_state_rules,
    effective_rules,
    history_needed,
    registered_rule_names,
)

from .conftest import VALID_ARGS, assert_actionable, make_context, make_policy, make_version

DATE_ORDER = {"type": "date_order", "start": "start_date", "end": "end_date"}
MAX_SPAN = {"type": "max_span", "start": "start_date", "end": "end_date", "max_days": 90}
DATED = make_version(rules=[DATE_ORDER, MAX_SPAN])


@business_rule("tests.no_cancelled_on_sundays")
def _no_cancelled_on_sundays(arguments, context, history):
    if arguments.get("status") == "cancelled" and context.now.weekday() == 6:
        raise BusinessRuleError(
            "Cancelled orders cannot be searched on Sundays.",
            hint="Search paid or pending orders, or try again on Monday.",
        )


def _invalid(arguments, version=DATED, policy=None) -> InvalidArgsError:
    with pytest.raises(InvalidArgsError) as caught:
        check_argument_rules(arguments, version, policy or make_policy())
    assert_actionable(caught.value, kind="invalid_args", recoverable=True)
    return caught.value


def _refused(version, history, policy=None, arguments=VALID_ARGS) -> BusinessRuleError:
    with pytest.raises(BusinessRuleError) as caught:
        check_state_rules(arguments, version, make_context(policy=policy), history)
    assert_actionable(caught.value, kind="business_rule", recoverable=True)
    return caught.value


def _dates(start: str, end: str) -> dict:
    return {**VALID_ARGS, "start_date": start, "end_date": end}


# --- effective rules: a tenant can only narrow ---


def test_a_tenant_override_lowers_a_limit_and_replaces_the_hint():
    policy = make_policy(
        rule_overrides={"max_span": {"max_days": 31, "hint": "Ask month by month.", "start": "end_date"}}
    )

    (_, span) = effective_rules(DATED, policy)

    assert dict(span) == {**MAX_SPAN, "max_days": 31, "hint": "Ask month by month."}


def test_a_tenant_override_cannot_widen_a_limit():
    policy = make_policy(rule_overrides={"max_span": {"max_days": 365}})

    assert effective_rules(DATED, policy)[1]["max_days"] == 90


def test_a_nonsense_span_override_still_gives_a_usable_split():
    policy = make_policy(rule_overrides={"max_span": {"max_days": 0}})

    error = _invalid(_dates("2026-01-01", "2026-01-02"), policy=policy)

    assert "2026-01-01..2026-01-01, 2026-01-02..2026-01-02." in error.hint


def test_policy_budgets_narrow_declared_rules_and_add_missing_ones():
    version = make_version(rules=[{"type": "task_budget", "max_calls": 5}])
    policy = make_policy(task_call_budget=2, daily_quota_per_subject=50)

    rules = [dict(rule) for rule in effective_rules(version, policy)]

    assert rules == [{"type": "task_budget", "max_calls": 2}, {"type": "daily_quota", "max_calls": 50}]


def test_a_rule_override_alone_adds_a_budget_the_version_lacks():
    policy = make_policy(daily_quota_per_subject=50, rule_overrides={"daily_quota": {"max_calls": 20}})

    assert [dict(rule) for rule in effective_rules(make_version(), policy)] == [
        {"type": "daily_quota", "max_calls": 20},
    ]


def test_the_narrowing_of_another_policy_is_seen_at_once():
    # Effective rules are kept per (version, policy) object: a catalog reloaded after a
    # policy change brings new objects, whose narrowing the very next call sees.
    before = make_policy(rule_overrides={"max_span": {"max_days": 60}})
    after = make_policy(rule_overrides={"max_span": {"max_days": 30}})

    first = effective_rules(DATED, before)
    again = effective_rules(DATED, before)
    changed = effective_rules(DATED, after)

    assert again is first and first[1]["max_days"] == 60
    assert changed[1]["max_days"] == 30
    assert effective_rules(make_version(rules=[{"type": "task_budget", "max_calls": 5}]), before) == (
        {"type": "task_budget", "max_calls": 5},
    )


# --- rules the arguments alone can satisfy ---


def test_end_before_start_is_invalid_with_both_values_and_the_swap():
    error = _invalid(_dates("2026-03-01", "2026-02-01"))

    assert "2026-03-01" in error.message and "2026-02-01" in error.message
    assert error.hint == "Swap start_date and end_date and call again."
    assert [d.path for d in error.details] == ["/end_date"]


def test_the_rules_own_hint_is_used_when_declared():
    version = make_version(rules=[{**DATE_ORDER, "hint": "Put the earlier date in start_date, please."}])

    assert _invalid(_dates("2026-03-01", "2026-02-01"), version).hint == (
        "Put the earlier date in start_date, please."
    )


@pytest.mark.parametrize(("start", "end"), [("2026-01-01", "2026-01-01"), ("2026-01-01", "2026-03-31")])
def test_ordered_ranges_within_the_span_pass(start, end):
    check_argument_rules(_dates(start, end), DATED, make_policy())


def test_a_range_one_day_too_long_is_refused():
    # 2026-01-01..2026-04-01 covers 91 days, both ends included.
    _invalid(_dates("2026-01-01", "2026-04-01"))


def test_a_too_long_range_gets_the_limit_and_a_concrete_split():
    error = _invalid(_dates("2026-01-01", "2026-06-29"))

    assert "180 days" in error.message
    assert "at most 90 days" in error.hint
    assert "2 consecutive calls" in error.hint
    assert "2026-01-01..2026-03-31, 2026-04-01..2026-06-29." in error.hint
    assert [d.path for d in error.details] == ["/start_date", "/end_date"]


def test_the_split_ends_at_the_requested_end_and_long_splits_are_abridged():
    error = _invalid(
        _dates("2026-01-01", "2026-12-31"), policy=make_policy(rule_overrides={"max_span": {"max_days": 31}})
    )

    assert "2026-01-01..2026-01-31, 2026-02-01..2026-03-03," in error.hint
    assert "(12 ranges in all)" in error.hint


def test_a_max_span_hint_of_the_rule_comes_first():
    version = make_version(rules=[{**MAX_SPAN, "hint": "Reports cover one quarter at most."}])

    error = _invalid(_dates("2026-01-01", "2026-06-29"), version)

    assert error.hint.startswith("Reports cover one quarter at most. ")
    assert "2026-04-01..2026-06-29" in error.hint


@pytest.mark.parametrize("start", ["soon", "2026/01/01", 20260101, None])
def test_dates_of_another_shape_are_left_to_the_schema(start):
    check_argument_rules({**VALID_ARGS, "start_date": start}, DATED, make_policy())


def test_an_impossible_calendar_date_is_explained():
    error = _invalid(_dates("2026-01-01", "2026-02-30"))

    assert "2026-02 has 28 days" in error.hint
    assert [d.path for d in error.details] == ["/end_date"]


# --- rules about state ---


def test_the_task_budget_refuses_once_used_up():
    version = make_version(rules=[{"type": "task_budget", "max_calls": 5}])
    check_state_rules(VALID_ARGS, version, make_context(), TaskHistory(calls_of_tool_in_task=4))

    error = _refused(version, TaskHistory(calls_of_tool_in_task=5))

    assert "5 times" in error.message
    assert "Do not call search_orders again in this task" in error.hint


def test_the_tenant_budget_applies_without_a_declared_rule_and_the_narrower_wins():
    version = make_version(
        rules=[{"type": "task_budget", "max_calls": 5, "hint": "Answer with the orders you already found."}]
    )

    error = _refused(version, TaskHistory(calls_of_tool_in_task=2), make_policy(task_call_budget=2))

    assert error.hint == "Answer with the orders you already found."
    _refused(make_version(), TaskHistory(calls_of_tool_in_task=2), make_policy(task_call_budget=2))


def test_the_daily_quota_counts_the_subjects_calls_today():
    version = make_version(rules=[{"type": "daily_quota", "max_calls": 100}])
    policy = make_policy(daily_quota_per_subject=10)
    check_state_rules(VALID_ARGS, version, make_context(policy=policy), TaskHistory(subject_calls_today=9))

    error = _refused(version, TaskHistory(subject_calls_today=10), policy)

    assert "daily limit of 10" in error.message
    assert "resets tomorrow" in error.hint


LEFT = {"type": "state_limit", "field": "limit", "reader": "tests.left"}


def _limited(maximum: int) -> CallState:
    return CallState(limits={"tests.left": StateLimit(maximum=maximum, left=f"{maximum} are left")})


def test_a_state_limit_refuses_more_than_what_is_left_and_names_it():
    version = make_version(rules=[LEFT])
    check_state_rules({**VALID_ARGS, "limit": 20}, version, make_context(), TaskHistory(), _limited(20))

    with pytest.raises(BusinessRuleError) as caught:
        check_state_rules({**VALID_ARGS, "limit": 21}, version, make_context(), TaskHistory(), _limited(20))

    assert_actionable(caught.value, kind="business_rule", recoverable=True)
    assert caught.value.message == "limit is 21, but only 20 are left."
    assert "at most 20" in caught.value.hint
    assert [d.path for d in caught.value.details] == ["/limit"]


def test_a_state_limit_with_nothing_found_is_left_to_the_executor():
    check_state_rules({**VALID_ARGS, "limit": 21}, make_version(rules=[LEFT]), make_context(), TaskHistory(),
                      CallState(limits={"tests.left": None}))


def test_a_state_limit_whose_reader_read_nothing_makes_the_tool_unavailable():
    with pytest.raises(UnavailableError) as caught:
        check_state_rules(VALID_ARGS, make_version(rules=[LEFT]), make_context(), TaskHistory(), CallState())

    assert "tests.left" in caught.value.message


def test_a_required_earlier_call_names_the_tool_to_call_first():
    version = make_version(rules=[{"type": "requires_earlier_call", "tool": "verify_customer"}])
    check_state_rules(
        VALID_ARGS,
        version,
        make_context(),
        TaskHistory(committed_tools_in_task=frozenset({"verify_customer"})),
    )

    error = _refused(version, TaskHistory(committed_tools_in_task=frozenset({"search_orders"})))

    assert error.hint.startswith("Call verify_customer first in this task")


def test_a_custom_rule_runs_with_the_arguments_context_and_history(history):
    version = make_version(rules=[{"type": "custom", "callable": "tests.no_cancelled_on_sundays"}])
    assert make_context().now.weekday() == 6  # the tests' clock is on a Sunday
    check_state_rules({**VALID_ARGS, "status": "paid"}, version, make_context(), history)

    error = _refused(version, history, arguments={**VALID_ARGS, "status": "cancelled"})

    assert error.hint == "Search paid or pending orders, or try again on Monday."
    assert "tests.no_cancelled_on_sundays" in registered_rule_names()


def test_a_declared_hint_replaces_the_custom_rules_own(history):
    version = make_version(
        rules=[
            {
                "type": "custom",
                "callable": "tests.no_cancelled_on_sundays",
                "hint": "Ask the user whether paid orders will do.",
            }
        ]
    )

    error = _refused(version, history, arguments={**VALID_ARGS, "status": "cancelled"})

    assert error.hint == "Ask the user whether paid orders will do."
    assert error.message == "Cancelled orders cannot be searched on Sundays."


def test_an_unregistered_custom_rule_makes_the_tool_unavailable(history):
    version = make_version(rules=[{"type": "custom", "callable": "tests.nobody_registered_this"}])

    with pytest.raises(UnavailableError) as caught:
        check_state_rules(VALID_ARGS, version, make_context(), history)

    assert_actionable(caught.value, kind="unavailable", recoverable=False)


def test_a_taken_rule_name_cannot_be_registered_by_another_function():
    with pytest.raises(ValueError, match="already registered"):
        business_rule("tests.no_cancelled_on_sundays")(lambda arguments, context, history: None)


# --- which counters to load ---


@pytest.mark.parametrize(
    ("rules", "policy", "needs"),
    [
        ([DATE_ORDER, MAX_SPAN], make_policy(), HistoryNeeds()),
        ([{"type": "task_budget", "max_calls": 3}], make_policy(), HistoryNeeds(task_calls=True)),
        ([], make_policy(daily_quota_per_subject=5), HistoryNeeds(subject_calls=True)),
        ([{"type": "requires_earlier_call", "tool": "x"}], make_policy(), HistoryNeeds(committed_tools=True)),
        (
            [{"type": "custom", "callable": "tests.no_cancelled_on_sundays"}],
            make_policy(),
            HistoryNeeds(task_calls=True, subject_calls=True, committed_tools=True),
        ),
    ],
)
def test_only_the_counters_the_rules_read_are_needed(rules, policy, needs):
    assert history_needed(make_version(rules=rules), policy) == needs
