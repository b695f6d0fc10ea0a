"""Arguments for a tool, generated from ToolHub's own stored parameters schema by
hypothesis-jsonschema (JSON Schema → Hypothesis strategies, kept by Hypothesis' authors).

Deterministic: the same seed and schema give the same arguments. Hypothesis tries the
simplest value first (only the required properties, empty strings); the richest of the
first few examples is kept so optional parameters (a query array, a nested form field)
go on the wire too. Each tool has a time budget, checked between examples (one slow example is
bounded by Hypothesis' own too_slow health check); a schema that cannot be generated, or too
slowly, is reported with the reason instead of stopping the run."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis_jsonschema import from_schema

EXAMPLES = 5
# Size is no reason to give up on a schema (Stripe's have dozens of required fields); time and
# values rejected by filters are, and Hypothesis' own health checks for those stay on.
SIZE_CHECKS = [HealthCheck.large_base_example, HealthCheck.data_too_large]


# The integers a JSON number holds exactly: ToolHub refuses others as arguments (contract), and
# no model sends them; Hypothesis' unbounded integers would make those calls refusals only.
EXACT_INTEGER = 2**53 - 1


def _exact(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= EXACT_INTEGER
    if isinstance(value, dict):
        return all(_exact(v) for v in value.values())
    if isinstance(value, list):
        return all(_exact(v) for v in value)
    return True


class NotGenerated(Exception):
    """No arguments for this schema; the message says why."""


class _Enough(Exception):
    """The budget is spent and there is a value: stop drawing more."""


def generate_arguments(schema: Mapping[str, Any], *, run_seed: int, budget_s: float) -> dict[str, Any]:
    """Arguments satisfying `schema`, or NotGenerated."""
    drawn: list[Any] = []
    deadline = time.monotonic() + budget_s

    @seed(run_seed)
    @settings(max_examples=EXAMPLES, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=SIZE_CHECKS)
    @given(st.deferred(lambda: from_schema(dict(schema), allow_x00=False, codec="utf-8").filter(_exact)))
    def draw(value: Any) -> None:
        drawn.append(value)
        # Checked between examples, never by a signal: Hypothesis must unwind its own state.
        if time.monotonic() > deadline:
            raise _Enough

    try:
        with warnings.catch_warnings():
            # hypothesis-jsonschema warns of patterns Python cannot compile; the reason is reported.
            warnings.simplefilter("ignore")
            draw()
    except _Enough:
        pass
    except (HypothesisException, ValueError, TypeError, KeyError, RecursionError) as error:
        raise NotGenerated(f"{type(error).__name__}: {' '.join(str(error).split())[:300]}") from None
    if not drawn:
        raise NotGenerated("Hypothesis drew no value")
    richest = max(drawn, key=lambda value: len(json.dumps(value, default=str)))
    if not isinstance(richest, dict):
        raise NotGenerated(f"the schema gives {type(richest).__name__}, not an object")
    return richest
