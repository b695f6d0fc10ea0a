"""The executor of each kind: one package per kind under executors/, each registering itself.

A package's `__init__.py` calls `register(Executor(...))`; `discover()` imports every package
beside this module when the gateway app is ready (GatewayConfig.ready), so adding a kind is
adding a package and nothing else. Registering also declares the kind to the catalog
(apps/common/executor_kinds.py), which lists the kinds and checks each one's config without
importing the gateway.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from apps.common.executor_kinds import ExecutorKindDeclaration, register_executor_kind

from .base import ExecutionRequest, ReconcileAnswer

Runner = Callable[[ExecutionRequest], Any]
Reconciler = Callable[[ExecutionRequest], ReconcileAnswer]


@dataclass(frozen=True, kw_only=True)
class Executor(ExecutorKindDeclaration):
    """One kind of executor: how a call of a version of this kind runs and is reconciled, and
    (as the declaration it extends) what the catalog checks of the version's executor_config.

    `run` returns the result or raises the ExecutionError subclasses of base.py, classified by
    what is known of the side effect; `reconcile` answers what became of an uncertain call.
    """

    run: Runner
    reconcile: Reconciler


class UnknownExecutorKind(LookupError):
    """No executor of this kind is registered (its package is missing, or not discovered yet)."""

    def __init__(self, kind: str) -> None:
        known = ", ".join(sorted(_EXECUTORS)) or "none"
        super().__init__(f"no executor of kind {kind!r} is registered (registered: {known})")
        self.kind = kind


_EXECUTORS: dict[str, Executor] = {}


def register(executor: Executor) -> Executor:
    """Register (or register again, replacing) the executor of `executor.kind`."""
    _EXECUTORS[executor.kind] = executor
    register_executor_kind(executor)
    return executor


def executor_for(kind: str) -> Executor:
    """The executor of `kind`; raises UnknownExecutorKind."""
    try:
        return _EXECUTORS[kind]
    except KeyError:
        raise UnknownExecutorKind(kind) from None


def registered() -> tuple[Executor, ...]:
    """Every registered executor, by kind."""
    return tuple(_EXECUTORS[kind] for kind in sorted(_EXECUTORS))


def discover() -> tuple[Executor, ...]:
    """Import every executor package beside this module (each registers itself); returns them."""
    package = __name__.rpartition(".")[0]
    for module in pkgutil.iter_modules(import_module(package).__path__):
        if module.ispkg:
            import_module(f"{package}.{module.name}")
    return registered()
