"""factory_boy factories shared by the whole suite."""

import logging
import sys
from datetime import datetime
from typing import Any

import factory
from django.utils import timezone

from apps.audit.models import Invocation
from apps.catalog.models import Tool, ToolVersion, VersionStatus
from apps.ledger.models import LedgerEntry
from apps.tenancy.models import Agent, Grant, Tenant
from apps.upstreams.models import Credential, McpLauncher, SubjectCredential, Upstream
from apps.upstreams.services import credential_set, credential_set_for_subject, launcher_save, upstream_save

# factory_boy logs every call's arguments at DEBUG, a credential's value among them: the
# tests that capture every record at DEBUG to show a secret is never logged must read only
# ToolHub's own records.
logging.getLogger("factory").setLevel(logging.INFO)

SIMPLE_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for."}},
    "required": ["query"],
    "additionalProperties": False,
}


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tool

    name = factory.Sequence(lambda n: f"tool_{n}")


class ToolVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolVersion

    tool = factory.SubFactory(ToolFactory)
    number = factory.Sequence(lambda n: n + 1)
    description = "Finds things. At most 20 results. Do not use it to change anything."
    parameters = factory.LazyFunction(lambda: dict(SIMPLE_SCHEMA))
    side_effect = "readonly"
    executor = "python"
    executor_config = factory.LazyFunction(lambda: {"callable": "tests.echo"})


class GrantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Grant

    tenant = factory.SubFactory(TenantFactory)
    tool = factory.SubFactory(ToolFactory)


# The bearer key of the shipping MCP server's upstream (UpstreamFactory(shipping=True)).
SHIPPING_KEY = "sk-live-7d2e-mcp-upstream-secret"


class CredentialFactory(factory.django.DjangoModelFactory):
    """A credential made by the upstreams app's service, so its value is stored encrypted as in
    production. `tenant=None` is the platform's; `per_subject=True` holds no value, each end
    user's token being a SubjectCredentialFactory."""

    class Meta:
        model = Credential

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"key-{n}")
    kind = "bearer"
    field = ""
    per_subject = False
    value = factory.LazyAttribute(lambda o: None if o.per_subject else f"sk-test-{o.name}-0123")
    actor = "test"

    @classmethod
    def _create(cls, model_class: type[Credential], *args: Any, **fields: Any) -> Credential:
        return credential_set(**fields)


class SubjectCredentialFactory(factory.django.DjangoModelFactory):
    """One end user's own token of a per-subject credential, registered (encrypted) by the
    service as the agent `agent` would register it."""

    class Meta:
        model = SubjectCredential

    credential = factory.SubFactory(CredentialFactory, per_subject=True)
    agent = factory.SubFactory(AgentFactory, tenant=factory.SelfAttribute("..credential.tenant"))
    subject = factory.Sequence(lambda n: f"u-{n}")
    value = factory.LazyAttribute(lambda o: f"token-of-{o.subject}-0123")
    actor = "test"

    @classmethod
    def _create(cls, model_class: type[SubjectCredential], *args: Any, agent: Agent, **fields: Any
                ) -> SubjectCredential:
        return credential_set_for_subject(agent_id=agent.pk, **fields)


class McpLauncherFactory(factory.django.DjangoModelFactory):
    """A launcher registered by the service (validated, audited): `mcp-server-time` from this
    suite's own environment by default (a dev dependency), told to use UTC."""

    class Meta:
        model = McpLauncher

    name = factory.Sequence(lambda n: f"launcher-{n}")
    command = factory.LazyFunction(lambda: [f"{sys.prefix}/bin/mcp-server-time", "--local-timezone", "UTC"])
    actor = "test"

    @classmethod
    def _create(cls, model_class: type[McpLauncher], *args: Any, actor: str, **fields: Any) -> McpLauncher:
        return launcher_save(launcher=model_class(**fields), actor=actor)


class UpstreamFactory(factory.django.DjangoModelFactory):
    """An upstream saved by the upstreams app's service (validated, audited): an HTTP API of a
    tenant by default, without a credential.

    Traits: `keyed`, with a credential of its owner; `mcp`, an MCP server; `platform` (or
    tenant=None), the platform's; `orders`, the HTTP API `orders-api` with its key
    `orders-key`; `shipping`, the MCP server `shipping` with its bearer key `shipping-key`
    (SHIPPING_KEY; give base_url). The credential's fields are set with credential__…;
    credential__per_subject=True makes it each end user's own token."""

    class Meta:
        model = Upstream

    class Params:
        mcp = factory.Trait(kind="mcp")
        platform = factory.Trait(tenant=None)
        # A credential of the upstream's own owner (set its fields with credential__…).
        keyed = factory.Trait(
            credential=factory.SubFactory(CredentialFactory, tenant=factory.SelfAttribute("..tenant"))
        )
        orders = factory.Trait(
            name="orders-api",
            credential=factory.SubFactory(
                CredentialFactory, tenant=factory.SelfAttribute("..tenant"), name="orders-key"
            ),
        )
        shipping = factory.Trait(
            kind="mcp",
            name="shipping",
            credential=factory.SubFactory(
                CredentialFactory, tenant=factory.SelfAttribute("..tenant"), name="shipping-key",
                value=factory.LazyAttribute(lambda o: None if o.per_subject else SHIPPING_KEY),
            ),
        )

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"upstream-{n}")
    kind = "http"
    base_url = "https://orders.example.com/v1"
    credential = None
    actor = "test"

    @classmethod
    def _create(cls, model_class: type[Upstream], *args: Any, actor: str, **fields: Any) -> Upstream:
        return upstream_save(upstream=model_class(**fields), actor=actor)


# Code runs, stored as the sandbox executor leaves them (apps/gateway/code_runs.py): the run's
# entry, its inner calls in the invocation log, and an entry per inner write.
CODE_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "minLength": 1}},
    "required": ["code"],
    "additionalProperties": False,
}


def run_python_version(*, tenant: Tenant) -> ToolVersion:
    """The tenant's run_python tool, version 1, published: a version of the sandbox executor
    (made on first use)."""
    existing = ToolVersion.objects.filter(tool__tenant=tenant, tool__name="run_python", number=1).first()
    if existing is not None:
        return existing
    version = ToolVersionFactory(
        tool=ToolFactory(name="run_python", tenant=tenant), number=1, parameters=dict(CODE_SCHEMA),
        side_effect="write", executor="sandbox", executor_config={},
        description="Runs Python code that calls the tools beside it, for work of many calls.",
    )
    ToolVersion.objects.filter(pk=version.pk).update(status=VersionStatus.PUBLISHED)
    version.refresh_from_db()
    return version


def code_run(
    *, version: ToolVersion, agent: Agent, code: str, state: str = "committed", result: Any = None,
    stdout: str = "", calls: int = 0, error: dict[str, Any] | None = None, task_id: str = "t-run",
    call_id: str = "run_1", at: datetime | None = None,
) -> LedgerEntry:
    """A run's entry: committed with `result`, `stdout` and `calls`, or failed with `error`
    (an envelope; give its raw), or still `intent`/`unknown`."""
    tenant = agent.tenant
    entry = LedgerEntry.objects.create(
        tenant=tenant, agent=agent, key=f"{tenant.slug}/{task_id}/{call_id}/run_python/h", task_id=task_id,
        call_id=call_id, tool=version.tool, version=version, subject="u-1001", args_hash="h",
        arguments={"code": code}, state=state,
        result={"result": result, "stdout": stdout, "calls": calls} if state == "committed" else None,
        error=error, settled_at=timezone.now() if state in ("committed", "failed") else None,
    )
    if at is not None:
        LedgerEntry.objects.filter(pk=entry.pk).update(created_at=at)
        entry.refresh_from_db()
    return entry


def inner_call(
    *, run: LedgerEntry, n: int, tool: str, envelope: dict[str, Any], latency_ms: float = 12.0,
    execution_id: Any = None, at: datetime | None = None,
) -> Invocation:
    """The n-th call of the run's code, logged with the run as its parent."""
    row = Invocation.objects.create(
        tenant=run.tenant, agent=run.agent, task_id=run.task_id, call_id=f"{run.call_id}#{n}", tool_name=tool,
        version_number=1, status=envelope["status"], kind=envelope.get("kind", ""), latency_ms=latency_ms,
        execution_id=execution_id, parent_execution_id=run.pk, envelope=envelope,
    )
    if at is not None:
        Invocation.objects.filter(pk=row.pk).update(created_at=at)
    return row


def inner_write(*, run: LedgerEntry, n: int, version: ToolVersion, arguments: dict[str, Any],
                state: str = "committed") -> LedgerEntry:
    """The ledger entry of the run's n-th call, a write."""
    call_id = f"{run.call_id}#{n}"
    key = f"{run.tenant.slug}/{run.task_id}/{call_id}/{version.tool.name}/w"
    return LedgerEntry.objects.create(
        tenant=run.tenant, agent=run.agent, key=key, task_id=run.task_id, call_id=call_id, tool=version.tool,
        version=version, subject=run.subject, args_hash=f"w{n}", arguments=arguments, state=state, parent=run,
        settled_at=timezone.now() if state in ("committed", "failed") else None,
    )
