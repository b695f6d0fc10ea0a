"""The one table of ToolHub's Celery task names (why names never change: apps/common/tasks.py)."""

from __future__ import annotations

import enum


class TaskName(enum.StrEnum):
    """Every ToolHub task's name: the wire identifier the broker and beat use (never renamed)."""

    AUDIT_CREATE_PARTITIONS = "audit.create_partitions"
    AUDIT_APPLY_RETENTION = "audit.apply_retention"
    DASHBOARDS_ROLLUP_INVOCATIONS = "dashboards.rollup_invocations"
    GATEWAY_EXECUTE_ENTRY = "gateway.execute_entry"
    IMPORTS_OPENAPI_IMPORT = "imports.openapi_import"
    # Run by the gateway (only it may run executors); named for what they act on.
    LEDGER_SWEEP = "ledger.sweep"
    LEDGER_RECONCILE_DUE = "ledger.reconcile_due"
    LEDGER_RECONCILE_ENTRY = "ledger.reconcile_entry"
    # Run by imports (the drift checks); named for what they act on.
    UPSTREAMS_SYNC_DUE = "upstreams.sync_due"
    UPSTREAMS_SYNC = "upstreams.sync"
