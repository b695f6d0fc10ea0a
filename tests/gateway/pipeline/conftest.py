"""Builders for the pure stage tests: frozen specs made directly, no database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from apps.common.errors import ToolHubError
from apps.gateway.contracts import CallContext, PolicySpec, TaskHistory, VersionSpec, _frozen
from apps.tenancy.sessions import SessionClaims

# The demo shop's search_orders, as in the contract and the issue that started ToolHub.
SEARCH_ORDERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["pending", "paid", "cancelled", "all"]},
        "start_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "end_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "user_id": {"type": "string"},
    },
    "required": ["status", "start_date", "end_date", "limit", "user_id"],
    "additionalProperties": False,
}
USER_BINDING = {"user_id": {"source": "session.subject", "policy": "must_match"}}
VALID_ARGS: dict[str, Any] = {
    "status": "paid",
    "start_date": "2026-01-01",
    "end_date": "2026-01-31",
    "limit": 20,
}
NOW = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


def make_version(**overrides: Any) -> VersionSpec:
    """search_orders v3 with its user binding and nothing else declared; override any field.

    JSON-like overrides (parameters, normalizers, rules, ...) are given as plain dicts and
    lists and frozen here, as VersionSpec.from_model does.
    """
    values: dict[str, Any] = {
        "tool_id": 1,
        "tool_name": "search_orders",
        "version_id": 10,
        "number": 3,
        "status": "published",
        "description": "Search the current user's orders by status and date range. At most 100.",
        "parameters": SEARCH_ORDERS_SCHEMA,
        "strict": True,
        "side_effect": "readonly",
        "executor": "python",
        "executor_config": {"callable": "demo_shop.search_orders"},
        "timeout_s": 5.0,
        "max_chars": 8000,
        "mode": "sync",
        "normalizers": {},
        "context_bindings": USER_BINDING,
        "rules": [],
        "approval": {},
        "empty_meaning": "No orders match these filters. This does not mean the user has no orders.",
        "loop_limit": 3,
        "revision": "",
    }
    values.update(overrides)
    for name in ("parameters", "executor_config", "normalizers", "context_bindings", "approval"):
        values[name] = _frozen(values[name])
    values["rules"] = tuple(_frozen(list(values["rules"])))
    return VersionSpec(**values)


def make_session(subject: str = "u-1", **attributes: Any) -> SessionClaims:
    return SessionClaims(tenant_id=1, agent_id=1, subject=subject, attributes=attributes)


def make_context(*, policy: PolicySpec | None = None, session: SessionClaims | None = None) -> CallContext:
    return CallContext(
        tenant_id=1,
        tenant_slug="acme",
        agent_id=1,
        task_id="t-42",
        now=NOW,
        session=session or make_session(),
        policy=policy or PolicySpec(),
    )


def make_policy(**values: Any) -> PolicySpec:
    overrides = values.pop("rule_overrides", {})
    return PolicySpec(**values, rule_overrides=_frozen(overrides))


def assert_actionable(error: ToolHubError, *, kind: str, recoverable: bool) -> dict[str, Any]:
    """The error is of `kind`, says whether retrying helps, and tells the reader what to do.

    Returns its envelope, which must be plain JSON.
    """
    assert error.kind == kind
    assert error.recoverable is recoverable
    assert error.message.strip()
    assert len(error.hint) >= 30, error.hint
    envelope = error.as_envelope(call_id="call_1")
    assert json.loads(json.dumps(envelope)) == envelope
    return envelope


@pytest.fixture
def version() -> VersionSpec:
    return make_version()


@pytest.fixture
def history() -> TaskHistory:
    return TaskHistory()
