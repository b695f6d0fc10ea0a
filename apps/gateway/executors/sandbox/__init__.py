"""The `sandbox` kind: code mode. A version of this kind (the demo's `run_python`) takes
Python code, runs it isolated (runs.py `run_code`; isolation.py says what confines it and
why) and answers every tool call the code makes through the whole pipeline (hooks.py,
apps/gateway/code_runs.py); executor.py turns what the run ended in into a result or an
error the model can act on."""

from __future__ import annotations

from apps.common.executor_kinds import CODE_RUN_KIND

from ..registry import Executor, register
from .executor import CONFIG_SCHEMA, reconcile_sandbox, run_sandbox

EXECUTOR = register(
    Executor(
        kind=CODE_RUN_KIND,
        label="Code run (Python sandbox)",
        run=run_sandbox,
        reconcile=reconcile_sandbox,
        config_schema=CONFIG_SCHEMA,
    )
)
