"""Frozen values that cross the gateway's layers.

The validation stages (apps/gateway/pipeline/) take and return only these, never model
instances or querysets, so they stay pure and testable without a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from apps.common.errors import ToolHubError
from apps.tenancy.sessions import SessionClaims

if TYPE_CHECKING:
    from apps.catalog.models import ToolVersion
    from apps.tenancy.models import TenantPolicy



def _frozen(value: Any) -> Any:
    """Deep read-only copy of JSON-like data (dicts become mapping proxies, lists tuples)."""
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain JSON-able copy of data frozen by `_frozen`."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class InvokeOptions:
    """What the request says about every call in it."""

    task_id: str
    toolset: str | None = None
    phase: str | None = None
    dry_run: bool = False
    # How long the client waits for a slow call before taking `accepted` (0: run it in the request).
    wait_s: float = 0
    # The execution of the code run (run_python call) whose code makes these calls.
    parent_execution_id: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """One call as the model wrote it: `arguments` is its JSON text (or an object)."""

    call_id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class VersionSpec:
    """A snapshot of one tool version: everything the pipeline needs, nothing mutable."""

    tool_id: int
    tool_name: str
    version_id: int
    number: int
    status: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool
    side_effect: str
    executor: str
    executor_config: Mapping[str, Any]
    timeout_s: float
    max_chars: int
    mode: str
    normalizers: Mapping[str, tuple[str, ...]]
    context_bindings: Mapping[str, Mapping[str, str]]
    rules: tuple[Mapping[str, Any], ...]
    approval: Mapping[str, Any]
    empty_meaning: str
    loop_limit: int
    # Changes whenever a draft is edited, so caches keyed on it never serve stale drafts.
    revision: str = ""
    # The tool is in the shared catalog (no tenant): only then may it use platform secrets.
    platform_owned: bool = False
    # JSON Schema of the result's data ({}: none declared): MCP's outputSchema, and what a
    # result must match to be answered as structuredContent.
    output_schema: Mapping[str, Any] = field(default_factory=dict)
    # MCP annotations an import brought (the side-effect hints are derived, not taken from here).
    annotations: Mapping[str, Any] = field(default_factory=dict)
    # Runs on a worker, and a call that does not say how long it waits waits up to timeout_s
    # for the outcome (code runs: AgentCatalog.visible).
    waits_for_worker: bool = False

    @classmethod
    def from_model(cls, version: ToolVersion) -> VersionSpec:
        return cls(
            tool_id=version.tool_id,
            tool_name=version.tool.name,
            version_id=version.pk,
            number=version.number,
            status=version.status,
            description=version.description,
            parameters=_frozen(version.parameters),
            strict=version.strict,
            side_effect=version.side_effect,
            executor=version.executor,
            executor_config=_frozen(version.executor_config),
            timeout_s=version.timeout_s,
            max_chars=version.max_chars,
            mode=version.mode,
            normalizers=_frozen(version.normalizers),
            context_bindings=_frozen(version.context_bindings),
            rules=_frozen(list(version.rules)),
            approval=_frozen(version.approval),
            empty_meaning=version.meaning_of_empty,
            loop_limit=version.loop_limit,
            revision=f"{version.pk}:{version.updated_at.isoformat() if version.updated_at else ''}",
            platform_owned=version.tool.tenant_id is None,
            output_schema=_frozen(version.output_schema),
            annotations=_frozen(version.annotations),
        )

    @property
    def is_write(self) -> bool:
        return self.side_effect == "write"


@dataclass(frozen=True)
class PolicySpec:
    """The tenant's narrowing of limits for one tool (tool policy over tenant-wide policy)."""

    rate_limit_per_minute: int | None = None
    task_call_budget: int | None = None
    daily_quota_per_subject: int | None = None
    requires_approval: bool = False
    rule_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _frozen({}))
    # request_capability may open the tool (a tenant-wide policy: any tool) to a task asking.
    open_on_request: bool = True
    max_opened_per_task: int | None = None

    @classmethod
    def merged(cls, *policies: TenantPolicy | None) -> PolicySpec:
        """Tenant-wide first, then tool-specific: a later non-empty value wins."""
        values: dict[str, Any] = {}
        overrides: dict[str, Any] = {}
        for policy in policies:
            if policy is None:
                continue
            for name in ("rate_limit_per_minute", "task_call_budget", "daily_quota_per_subject",
                         "max_opened_per_task"):
                if getattr(policy, name) is not None:
                    values[name] = getattr(policy, name)
            if policy.requires_approval:
                values["requires_approval"] = True
            if not policy.open_on_request:
                values["open_on_request"] = False
            overrides.update(policy.rule_overrides or {})
        return cls(**values, rule_overrides=_frozen(overrides))


@dataclass(frozen=True)
class CallContext:
    """Who is calling, for whom, in which task, and when: loaded before the pure stages."""

    tenant_id: int
    tenant_slug: str
    agent_id: int
    task_id: str
    now: datetime
    session: SessionClaims | None = None
    policy: PolicySpec = field(default_factory=PolicySpec)


@dataclass(frozen=True)
class TaskHistory:
    """What earlier calls did, as counted by the gateway: the input of state rules."""

    calls_of_tool_in_task: int = 0
    subject_calls_today: int = 0
    committed_tools_in_task: frozenset[str] = frozenset()
    identical_calls_in_task: int = 0


@dataclass(frozen=True)
class StateLimit:
    """A limit a state reader found for one call: `field` may be at most `maximum`. `left`
    says what it is, as the refusal tells the model: "41764 cents of order ORD-000008 are
    left to refund"."""

    maximum: int | float
    left: str


@dataclass(frozen=True)
class CallState:
    """What the state readers a version's rules name read for one call, before the pure
    state rules run: by reader name, a limit, or None when the reader found nothing to judge
    (the executor answers then, e.g. not_found)."""

    limits: Mapping[str, StateLimit | None] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class PreparedCall:
    """A call that passed the whole validation layer and may be executed."""

    call: ToolCall
    version: VersionSpec
    arguments: Mapping[str, Any]
    args_hash: str
    subject: str = ""
    # Why an operator must approve the call before it runs; None when it may run now.
    approval_reason: str | None = None
    # Another tool requires this one earlier in a task: remember when it succeeds.
    is_prerequisite: bool = True
    # This call id with these arguments already passed validation in this task: a retry,
    # which the ledger most likely answers from an existing entry.
    seen_before: bool = False
    # The tenant's narrowing of limits for this tool.
    policy: PolicySpec = field(default_factory=PolicySpec)
    # The end user's attributes from the session (a code run's inner calls are bound by them).
    session_attributes: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))
    # The upstreams' generation, read with the task's counters: the executor checks its memo
    # of upstreams against it instead of reading it again (None: the executor reads it).
    upstream_generation: int | None = None


@dataclass(frozen=True)
class TaskSighting:
    """What the task's counters say about a call before it runs (read by the gateway)."""

    # The first time this call id with these arguments reached the guards (a retry is not).
    first_sight: bool
    history: TaskHistory
    # The agent's calls of the tool this minute, this one included (0 in a dry run).
    calls_in_window: int
    retry_after_s: float
    # The upstreams' generation, read in the same round trip for a tool that calls an
    # upstream (None: not read, or not in the cache).
    upstream_generation: int | None = None


@dataclass(frozen=True)
class Executed:
    """The executor answered (or a replay of a committed key): the raw result, shaped when
    rendered."""

    result: Any
    cached: bool = False


@dataclass(frozen=True)
class Refused:
    """An error the model reads: from validation, from an executor, or from the ledger's state."""

    error: ToolHubError


@dataclass(frozen=True)
class FailedBefore:
    """A key the ledger recorded as failed: the error envelope stored when it failed. A replay
    (the same call sent again) says it is cached; an execution's poll says which it was."""

    error: Mapping[str, Any]
    replayed: bool


@dataclass(frozen=True)
class Pending:
    """The call runs later, on a worker (`accepted`) or once an operator approves it."""

    awaiting_approval: bool = False


@dataclass(frozen=True)
class WouldRun:
    """A dry run: the validation layer passed and nothing ran; what would run, under which key."""

    arguments: Mapping[str, Any]
    args_hash: str
    idempotency_key: str | None


# What became of a call; replies.py alone turns it into the envelope the model reads.
Answer = Executed | Refused | FailedBefore | Pending | WouldRun


@dataclass(frozen=True)
class Outcome:
    """A call after validation and execution, before it is rendered."""

    call: ToolCall
    answer: Answer
    version: VersionSpec | None = None
    execution_id: str | None = None
