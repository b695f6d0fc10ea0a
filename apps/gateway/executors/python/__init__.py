"""The `python` kind: a callable registered by an app (apps/gateway/callables.py), run on a
worker thread under the version's timeout."""

from __future__ import annotations

from typing import Any

from ..registry import Executor, register
from .executor import reconcile_python, run_python

# The registered callable's name, and the reconcile hook's (the callable's own by default).
CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"callable": {"type": "string", "minLength": 1},
                   "reconcile": {"type": "string", "minLength": 1}},
    "required": ["callable"],
    "additionalProperties": False,
}

EXECUTOR = register(
    Executor(
        kind="python",
        label="Python",
        run=run_python,
        reconcile=reconcile_python,
        config_schema=CONFIG_SCHEMA,
        reconcile_key="reconcile",
        reconcile_how='a "reconcile" callable in executor_config',
    )
)
