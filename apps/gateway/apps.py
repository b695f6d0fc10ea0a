"""apps.gateway owns the invoke path: the pure pipeline, the executors (the only outbound
I/O, through the egress transport), orchestration, the agent API, MCP, and the Celery tasks
that execute and reconcile ledger entries (keeping their `ledger.*` names).

May import: ledger, catalog, tenancy, upstreams, audit, common (layers contract,
pyproject.toml); never capabilities, imports, catalog_as_code, dashboards or demo_shop.
Inside, its own layers (the gateway contract): edges (api/, tasks, admin, and outbound and
callables for other apps) → invoke (services, validation, execution, replays, replies…) →
pipeline | executors → contracts | text. Other apps never reach into executors/ or pipeline/.
"""

from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "apps.gateway"
    label = "gateway"
    verbose_name = "Gateway"

    def ready(self) -> None:
        # Each executor package registers its kind, for the gateway and the catalog (executors/registry.py).
        from .executors import discover

        discover()

        # request_capability's executor: a python callable, registered when its module is imported.
        from . import capability_search  # noqa: F401

        # A code run's tool calls go through the invoke layer, which executors may not import.
        from .code_runs import run_calls
        from .executors.sandbox.hooks import register_run_calls

        register_run_calls(run_calls)

        # The ledger's admin approves and reconciles entries; only the gateway executes them,
        # and the ledger may not import it (apps/ledger/execution_hooks.py).
        from apps.ledger.execution_hooks import EntryExecution, register_entry_execution

        from .reconciliation import entry_arguments_hash, ledger_reconcile_entry
        from .tasks import enqueue_entry

        register_entry_execution(
            EntryExecution(
                enqueue=enqueue_entry,
                reconcile=lambda entry_id, actor: ledger_reconcile_entry(entry_id=entry_id, actor=actor),
                arguments_hash=entry_arguments_hash,
            )
        )
