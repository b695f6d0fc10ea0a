"""Where the time of one invoke goes: stages, database and cache round trips, hot functions.

In-process, through Django's test client (the whole middleware and DRF stack, no HTTP
server), one call at a time. Named functions of the pipeline are wrapped with timers that
keep exclusive time, so nested stages are not counted twice; whatever no wrapper claims is
the framework's (Django middleware, DRF dispatch, the test client). Every SQL statement,
transaction and connection health check is counted against the stage running when it
happens, and so is every Redis round trip. A second pass under cProfile groups the same
calls' CPU time by library. Wrappers cost about a microsecond per wrapped call.

Needs Django set up with the benchmark's settings (bench/run.py does it).
"""

from __future__ import annotations

import cProfile
import importlib
import pstats
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis.client
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper
from django.db.backends.utils import CursorWrapper
from django.test import Client

from apps.audit import invocation_log

FRAMEWORK = "Django + DRF (middleware, dispatch)"
_INHERITED = object()

# (module, attribute, stage); an attribute "Class.method" wraps the method on the class.
# The gateway imports most stage functions by name, so they are wrapped where they are called.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("rest_framework.parsers", "JSONParser.parse", "request body JSON parse"),
    ("apps.tenancy.authentication", "AgentKeyAuthentication.authenticate", "agent key (auth)"),
    ("apps.gateway.api.lean", "authenticated_agent", "agent key (auth)"),
    ("apps.gateway.services", "key_confirmed", "agent key (auth)"),
    ("apps.gateway.api.serializers", "InvokeInputSerializer.is_valid", "request envelope (serializer)"),
    ("apps.gateway.api.lean", "_json_object", "request body JSON parse"),
    ("apps.gateway.api.lean", "options", "request envelope (serializer)"),
    ("apps.gateway.api.lean", "call", "request envelope (serializer)"),
    ("apps.gateway.api.lean", "_rendered", "response JSON render"),
    ("apps.gateway.services", "invoke_calls", "orchestration (invoke_calls)"),
    ("apps.gateway.services", "_session", "session token"),
    ("apps.gateway.validation", "agent_catalog", "catalog memo (generation)"),
    ("apps.gateway.services", "prepare_call", "validation: resolve, glue"),
    ("apps.gateway.pipeline.validate", "resolve_tool", "validation: resolve, glue"),
    ("apps.gateway.pipeline.validate", "parse_arguments", "validation: parse"),
    ("apps.gateway.pipeline.validate", "strip_optional_nulls", "validation: parse"),
    ("apps.gateway.pipeline.validate", "normalize_arguments", "validation: normalize + hash"),
    ("apps.gateway.pipeline.validate", "validate_arguments", "validation: schema"),
    ("apps.gateway.pipeline.validate", "args_hash", "validation: normalize + hash"),
    ("apps.gateway.pipeline.validate", "apply_bindings", "validation: bindings"),
    ("apps.gateway.pipeline.validate", "check_argument_rules", "validation: rules"),
    ("apps.gateway.pipeline.validate", "check_state_rules", "validation: rules"),
    ("apps.gateway.pipeline.validate", "check_loop", "validation: rules"),
    ("apps.gateway.pipeline.validate", "check_rate", "validation: rules"),
    ("apps.gateway.counters", "see_call", "counters (cache)"),
    ("apps.gateway.counters", "forget_call", "counters (cache)"),
    ("apps.gateway.counters", "mark_done", "counters (cache)"),
    ("apps.gateway.execution", "ledger_entry_for_call", "ledger: replay lookup"),
    ("apps.gateway.execution", "ledger_open_intent", "ledger: intent"),
    ("apps.gateway.execution", "ledger_record_outcome", "ledger: outcome"),
    ("apps.gateway.execution", "execute", "executor (thread hop)"),
    ("apps.demo_shop.tools", "order_list_for_user", "tool code"),
    ("apps.demo_shop.tools", "order_cancel", "tool code"),
    ("apps.gateway.replies", "render", "shaping + envelope"),
    ("apps.gateway.services", "_log", "invocation log (enqueue)"),
    ("apps.demo_shop.api.views", "order_list_for_user", "tool code"),
    ("apps.demo_shop.api.views", "order_cancel", "tool code"),
    ("rest_framework.renderers", "JSONRenderer.render", "response JSON render"),
)


@dataclass
class StageCost:
    seconds: float = 0.0
    queries: int = 0
    query_seconds: float = 0.0
    transactions: int = 0
    health_checks: int = 0
    cache_trips: int = 0


@dataclass(frozen=True)
class Scenario:
    """A kind of call to profile: `request(i)` makes the i-th call with a test client."""

    name: str
    request: Callable[[Client, int], Any]


@dataclass(frozen=True)
class Profile:
    scenario: str
    calls: int
    wall_ms_per_call: float
    stages: dict[str, StageCost]


class _Recorder:
    """Exclusive time per stage on one stack: calls are profiled one at a time, and the
    request thread waits while an executor's worker thread runs, so the stack is shared."""

    def __init__(self) -> None:
        self.scenario = ""
        self.by_scenario: dict[str, dict[str, StageCost]] = defaultdict(lambda: defaultdict(StageCost))
        self._stack: list[list[Any]] = []  # [stage, started, time of nested stages]

    @property
    def costs(self) -> dict[str, StageCost]:
        return self.by_scenario[self.scenario]

    @property
    def current(self) -> str:
        if threading.current_thread() is invocation_log._writer:
            return "background: invocation log writer"
        return self._stack[-1][0] if self._stack else FRAMEWORK

    def timed(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            frame = [stage, time.perf_counter(), 0.0]
            self._stack.append(frame)
            try:
                return func(*args, **kwargs)
            finally:
                self._stack.pop()
                total = time.perf_counter() - frame[1]
                self.costs[stage].seconds += total - frame[2]
                if self._stack:
                    self._stack[-1][2] += total

        return wrapper


def _counting(recorder: _Recorder) -> list[tuple[Any, str, Callable[..., Any]]]:
    """Replacements that count round trips against the current stage."""

    def execute_with_wrappers(self: CursorWrapper, sql: str, params: Any, many: bool, executor: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_execute(self, sql, params, many, executor)
        finally:
            cost = recorder.costs[recorder.current]
            cost.queries += 1
            cost.query_seconds += time.perf_counter() - started

    def commit(self: BaseDatabaseWrapper) -> Any:
        recorder.costs[recorder.current].transactions += 1
        return original_commit(self)

    def rollback(self: BaseDatabaseWrapper) -> Any:
        recorder.costs[recorder.current].transactions += 1
        return original_rollback(self)

    def is_usable(self: PostgresWrapper) -> bool:
        recorder.costs[recorder.current].health_checks += 1
        return original_is_usable(self)

    def execute_command(self: redis.client.Redis, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, redis.client.Pipeline):
            recorder.costs[recorder.current].cache_trips += 1
        return original_command(self, *args, **kwargs)

    def pipeline_execute(self: redis.client.Pipeline, *args: Any, **kwargs: Any) -> Any:
        recorder.costs[recorder.current].cache_trips += 1
        return original_pipeline(self, *args, **kwargs)

    original_execute = CursorWrapper._execute_with_wrappers
    original_commit = BaseDatabaseWrapper._commit
    original_rollback = BaseDatabaseWrapper._rollback
    original_is_usable = PostgresWrapper.is_usable
    original_command = redis.client.Redis.execute_command
    original_pipeline = redis.client.Pipeline.execute
    return [
        (CursorWrapper, "_execute_with_wrappers", execute_with_wrappers),
        (BaseDatabaseWrapper, "_commit", commit),
        (BaseDatabaseWrapper, "_rollback", rollback),
        (PostgresWrapper, "is_usable", is_usable),
        (redis.client.Redis, "execute_command", execute_command),
        (redis.client.Pipeline, "execute", pipeline_execute),
    ]


@contextmanager
def _instrumented(recorder: _Recorder) -> Iterator[None]:
    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    for module_name, attribute, stage in STAGES:
        owner: Any = importlib.import_module(module_name)
        *classes, name = attribute.split(".")
        for class_name in classes:
            owner = getattr(owner, class_name)
        patches.append((owner, name, recorder.timed(stage, getattr(owner, name))))
    patches += _counting(recorder)
    # An inherited method is wrapped on the subclass and restored by deleting the wrapper.
    saved = [(owner, name, owner.__dict__.get(name, _INHERITED)) for owner, name, _ in patches]
    try:
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, original in reversed(saved):
            if original is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def profile_stages(
    scenarios: Sequence[Scenario], *, calls: int, warm_up: int = 20, rounds: int = 10
) -> list[Profile]:
    """Mean cost per call of each stage of each scenario over `calls` calls, after `warm_up`
    unmeasured ones. The scenarios take turns in `rounds`, so that a change in the machine's
    load meanwhile weighs on all of them alike."""
    client = Client()
    for scenario in scenarios:
        for i in range(warm_up):
            scenario.request(client, i)
    per_round = max(calls // rounds, 1)
    recorder = _Recorder()
    wall: dict[str, float] = defaultdict(float)
    with _instrumented(recorder):
        for round_number in range(rounds):
            first = warm_up + round_number * per_round
            for scenario in scenarios:
                recorder.scenario = scenario.name
                started = time.perf_counter()
                for i in range(first, first + per_round):
                    scenario.request(client, i)
                wall[scenario.name] += time.perf_counter() - started
    calls = per_round * rounds
    return [
        _mean_profile(scenario.name, recorder.by_scenario[scenario.name], wall[scenario.name], calls)
        for scenario in scenarios
    ]


def _mean_profile(name: str, costs: dict[str, StageCost], wall: float, calls: int) -> Profile:
    claimed = sum(c.seconds for stage, c in costs.items() if not stage.startswith("background"))
    costs[FRAMEWORK].seconds += max(wall - claimed, 0.0)
    stages = {
        stage: StageCost(
            seconds=cost.seconds / calls,
            queries=cost.queries,
            query_seconds=cost.query_seconds / calls,
            transactions=cost.transactions,
            health_checks=cost.health_checks,
            cache_trips=cost.cache_trips,
        )
        for stage, cost in costs.items()
    }
    return Profile(scenario=name, calls=calls, wall_ms_per_call=wall / calls * 1000, stages=stages)


# cProfile's view: CPU time by where the code lives.
_LIBRARIES = (
    ("/apps/", "ToolHub (apps/)"),
    ("/django/db/", "Django ORM"),
    ("/django/", "Django (other)"),
    ("/rest_framework/", "DRF"),
    ("/psycopg", "psycopg"),
    ("/redis/", "redis-py"),
    ("/jsonschema", "jsonschema"),
    ("/referencing/", "jsonschema"),
    ("/rfc8785", "rfc8785 (canonical JSON)"),
    ("/json/", "json (stdlib)"),
    ("/concurrent/", "threads (executor pool)"),
    ("/threading.py", "threads (executor pool)"),
)


def profile_libraries(scenario: Scenario, *, calls: int, start: int) -> list[tuple[str, float]]:
    """CPU ms per call by library (cProfile's own time of each function), largest first."""
    client = Client()
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(start, start + calls):
        scenario.request(client, i)
    profiler.disable()
    by_library: dict[str, float] = defaultdict(float)
    for (filename, _, function), row in pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
        own_seconds = row[2]
        library = next((name for marker, name in _LIBRARIES if marker in filename), None)
        if library is None:
            library = "built-ins (C)" if filename == "~" else "Python (other)"
            if "sleep" in function or "acquire" in function or "wait" in function:
                library = "waiting (locks, sleep)"
        by_library[library] += own_seconds
    return sorted(((name, s / calls * 1000) for name, s in by_library.items()), key=lambda x: -x[1])


def format_profile(profile: Profile) -> list[str]:
    calls = profile.calls
    lines = [
        f"{profile.scenario}: {profile.wall_ms_per_call:.2f} ms per call, mean of {calls} in-process calls",
        f"  {'stage':<38}{'ms':>7}{'share':>7}{'db ms':>7}{'SQL':>6}{'tx':>5}{'ping':>5}{'cache':>6}",
    ]
    total = sum(c.seconds for s, c in profile.stages.items() if not s.startswith("background"))
    for stage, cost in sorted(profile.stages.items(), key=lambda item: -item[1].seconds):
        if stage.startswith("background"):
            continue
        lines.append(
            f"  {stage:<38}{cost.seconds * 1000:>7.3f}{cost.seconds / total:>7.0%}"
            f"{cost.query_seconds * 1000:>7.2f}{cost.queries / calls:>6.1f}{cost.transactions / calls:>5.1f}"
            f"{cost.health_checks / calls:>5.1f}{cost.cache_trips / calls:>6.1f}"
        )
    sums = StageCost(
        queries=sum(c.queries for s, c in profile.stages.items() if not s.startswith("background")),
        transactions=sum(c.transactions for c in profile.stages.values()),
        health_checks=sum(c.health_checks for c in profile.stages.values()),
        cache_trips=sum(c.cache_trips for c in profile.stages.values()),
    )
    lines.append(
        f"  {'per call':<38}{total * 1000:>7.3f}{'':>14}{sums.queries / calls:>6.1f}"
        f"{sums.transactions / calls:>5.1f}{sums.health_checks / calls:>5.1f}{sums.cache_trips / calls:>6.1f}"
    )
    return lines
