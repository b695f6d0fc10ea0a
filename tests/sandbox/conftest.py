"""What the code sandbox's tests share: one pool for the session, with its scratch
directories in a folder of the test's, and `run` with a fake `call_tool` that answers from a
table and records what it was asked."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from apps.gateway.executors.sandbox.pool import stop_pool
from apps.gateway.executors.sandbox.runs import InnerCall, RunLimits, RunReport, run_code

# Small enough that the hostile tests end fast.
FAST = RunLimits(wall_s=5.0, cpu_s=1)


@pytest.fixture(scope="session", autouse=True)
def sandbox_scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("sandbox-scratch")
    with override_settings(TOOLHUB_SANDBOX_SCRATCH_DIR=root, TOOLHUB_SANDBOX_WARM=2):
        stop_pool()
        yield root
        stop_pool()


@dataclass
class FakeToolHub:
    """`call_tool`: the envelope of each tool from `answers` (ok with the arguments as data
    when none is given); every call kept in `calls`."""

    answers: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    delay_s: float = 0.0
    calls: list[InnerCall] = field(default_factory=list)

    def __call__(self, call: InnerCall) -> Mapping[str, Any]:
        self.calls.append(call)
        time.sleep(self.delay_s)
        return self.answers.get(call.tool, {"status": "ok", "data": call.arguments})


def run(code: str, *, hub: FakeToolHub | None = None, tools: tuple[str, ...] = ("search_orders",),
        **limits: Any) -> RunReport:
    return run_code(code, tool_names=tools, limits=replace(FAST, **limits), call_tool=hub or FakeToolHub())
