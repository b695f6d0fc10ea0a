"""One row of every model for one tenant, each carrying the tenant's slug in its text.

The isolation matrix makes tenant B's rows with these makers and then looks, as tenant A,
at every page and endpoint: B's slug must never show. A model without a maker cannot be
checked, so `test_every_admin_model_has_a_maker` fails until one is added here: write a
function that makes one row of tenant `rows.slug` (reusing other rows with `rows[label]`)
whose text shows on the model's admin pages, and register it with `@maker("app.Model")`.
A proxy model uses its concrete model's maker unless it has its own (a queue that shows
only some rows needs one that makes such a row).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

from django.contrib.auth.models import Group, User
from django.db import models
from django.utils import timezone

from apps.audit.models import AuditEvent, Invocation
from apps.capabilities.models import CapabilityRequest
from apps.catalog.models import DriftFinding, Toolset, ToolsetPhase
from apps.demo_shop.models import DemoOrder, DemoRefund, PaymentsFault
from apps.ledger.models import Approval, LedgerEntry, LedgerEvent, ReconcileAttempt
from apps.tenancy.models import Grant, StaffScope, TenantPolicy
from apps.tenancy.services import agent_key_issue
from tests.catalog.factories import published
from tests.factories import (
    AgentFactory,
    CredentialFactory,
    McpLauncherFactory,
    SubjectCredentialFactory,
    TenantFactory,
    ToolFactory,
    UpstreamFactory,
    code_run,
    run_python_version,
)

# The slug of the tenant whose rows must never show to the other one, and is in all its text.
MARK = "globex"

Maker = Callable[["TenantRows"], models.Model]
MAKERS: dict[str, Maker] = {}


def maker(label: str) -> Callable[[Maker], Maker]:
    def register(make: Maker) -> Maker:
        MAKERS[label] = make
        return make

    return register


def maker_for(model: type[models.Model]) -> Maker | None:
    return MAKERS.get(model._meta.label) or MAKERS.get(model._meta.concrete_model._meta.label)


class TenantRows:
    """A tenant's rows, each made on first use."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self._made: dict[str, models.Model] = {}

    def __getitem__(self, label: str) -> models.Model:
        if label not in self._made:
            self._made[label] = MAKERS[label](self)
        return self._made[label]

    def make(self, *labels: str) -> None:
        for label in labels:
            self[label]

    def of(self, model: type[models.Model]) -> models.Model:
        """This tenant's row of `model` (a proxy gets its concrete model's row if it has no maker)."""
        label = model._meta.label if model._meta.label in MAKERS else model._meta.concrete_model._meta.label
        row = self[label]
        return model._default_manager.get(pk=row.pk)

    def stored(self) -> dict[str, dict | None]:
        """Every row made so far as the database has it now: a change anywhere shows here."""
        return {
            label: type(row).objects.filter(pk=row.pk).values().first() for label, row in self._made.items()
        }

    @property
    def snake(self) -> str:
        return self.slug.replace("-", "_")


@maker("tenancy.Tenant")
def _tenant(rows: TenantRows) -> models.Model:
    return TenantFactory(slug=rows.slug, name=f"{rows.slug} Corporation")


@maker("tenancy.Agent")
def _agent(rows: TenantRows) -> models.Model:
    return AgentFactory(
        tenant=rows["tenancy.Tenant"], name=f"{rows.slug}-bot", description=f"{rows.slug} support"
    )


@maker("tenancy.AgentKey")
def _agent_key(rows: TenantRows) -> models.Model:
    return agent_key_issue(agent=rows["tenancy.Agent"], label=f"{rows.slug}-key").key


@maker("catalog.Tool")
def _tool(rows: TenantRows) -> models.Model:
    return ToolFactory(
        name=f"{rows.snake}_tool", tenant=rows["tenancy.Tenant"], summary=f"{rows.slug} lookups"
    )


@maker("catalog.ToolVersion")
def _version(rows: TenantRows) -> models.Model:
    return published(tool=rows["catalog.Tool"], number=1, description=f"{rows.slug} tool: finds things.")


@maker("tenancy.Grant")
def _grant(rows: TenantRows) -> models.Model:
    version = rows["catalog.ToolVersion"]  # published first: a granted tool is callable
    return Grant.objects.create(tenant=rows["tenancy.Tenant"], agent=rows["tenancy.Agent"], tool=version.tool)


@maker("tenancy.TenantPolicy")
def _policy(rows: TenantRows) -> models.Model:
    return TenantPolicy.objects.create(tenant=rows["tenancy.Tenant"], rate_limit_per_minute=10)


@maker("auth.User")
def _user(rows: TenantRows) -> models.Model:
    return User.objects.create_user(f"{rows.slug}-staff", email=f"ops@{rows.slug}.example", is_staff=True)


@maker("auth.Group")
def _group(rows: TenantRows) -> models.Model:
    return Group.objects.create(name=f"{rows.slug}-operators")


@maker("tenancy.StaffScope")
def _staff_scope(rows: TenantRows) -> models.Model:
    return StaffScope.objects.create(user=rows["auth.User"], tenant=rows["tenancy.Tenant"])


@maker("catalog.Toolset")
def _toolset(rows: TenantRows) -> models.Model:
    toolset = Toolset.objects.create(
        name=f"{rows.snake}_toolset", tenant=rows["tenancy.Tenant"], description=f"{rows.slug} support work"
    )
    toolset.tools.set([rows["catalog.Tool"]])
    return toolset


@maker("catalog.ToolsetPhase")
def _phase(rows: TenantRows) -> models.Model:
    phase = ToolsetPhase.objects.create(toolset=rows["catalog.Toolset"], name=f"{rows.snake}_phase")
    phase.tools.set([rows["catalog.Tool"]])
    return phase


@maker("ledger.LedgerEntry")
def _entry(rows: TenantRows) -> models.Model:
    """Unknown and waiting in triage: the state most operator pages show."""
    tool = rows["catalog.Tool"]
    now = timezone.now()
    return LedgerEntry.objects.create(
        tenant=rows["tenancy.Tenant"], agent=rows["tenancy.Agent"], tool=tool,
        version=rows["catalog.ToolVersion"], key=f"{rows.slug}/{rows.slug}-task/call_1/{tool.name}/h",
        task_id=f"{rows.slug}-task", call_id="call_1",
        subject=f"{rows.slug}-user", args_hash="h", arguments={"query": f"{rows.slug}-secret-argument"},
        state="unknown", attempts=5, triage_since=now, claimed_at=now,
    )


@maker("ledger.LedgerEvent")
def _event(rows: TenantRows) -> models.Model:
    return LedgerEvent.objects.create(
        entry=rows["ledger.LedgerEntry"], from_state="intent", to_state="unknown", actor="gateway",
        note=f"{rows.slug} timed out",
    )


@maker("ledger.ReconcileAttempt")
def _attempt(rows: TenantRows) -> models.Model:
    return ReconcileAttempt.objects.create(
        entry=rows["ledger.LedgerEntry"], answer="unclear", note=f"{rows.slug} provider busy",
        actor="reconciler",
    )


@maker("ledger.Approval")
def _approval(rows: TenantRows) -> models.Model:
    entry = rows["ledger.LedgerEntry"]
    return Approval.objects.create(
        entry=entry, tenant=entry.tenant, version=entry.version, args_hash=entry.args_hash,
        reason=f"{rows.slug} refund above the limit", expires_at=timezone.now() + timedelta(hours=1),
    )


@maker("audit.AuditEvent")
def _audit_event(rows: TenantRows) -> models.Model:
    return AuditEvent.objects.create(
        tenant=rows["tenancy.Tenant"], actor=f"admin:{rows.slug}-staff", action="agent.save",
        target_type="tenancy.agent", target_id="1", note=f"{rows.slug} renamed the bot",
    )


@maker("audit.Invocation")
def _invocation(rows: TenantRows) -> models.Model:
    return Invocation.objects.create(
        tenant=rows["tenancy.Tenant"], agent=rows["tenancy.Agent"], task_id=f"{rows.slug}-task",
        call_id="call_1",
        tool_name=rows["catalog.Tool"].name, status="ok", latency_ms=3.0,
        envelope={"status": "ok", "data": [f"{rows.slug}-result"]},
    )


@maker("capabilities.CapabilityRequest")
def _capability(rows: TenantRows) -> models.Model:
    now = timezone.now()
    return CapabilityRequest.objects.create(
        tenant=rows["tenancy.Tenant"], name=f"{rows.snake}_wish", count=2, first_seen=now, last_seen=now,
        samples=[{"agent": f"{rows.slug}-bot", "reason": f"{rows.slug} customer asked"}],
    )


@maker("demo_shop.DemoOrder")
def _order(rows: TenantRows) -> models.Model:
    return DemoOrder.objects.create(
        order_id=f"ORD-{int.from_bytes(rows.slug.encode()[:3], 'big') % 10**6:06d}",
        user_id=f"{rows.slug}-user", status="paid",
        amount_cents=1000, placed_on=date(2026, 1, 2), cancel_reason=f"{rows.slug}"[:32],
    )


@maker("demo_shop.DemoRefund")
def _refund(rows: TenantRows) -> models.Model:
    order = rows["demo_shop.DemoOrder"]
    return DemoRefund.objects.create(
        refund_id=f"{rows.slug}-refund"[:32], idempotency_key=f"{rows.slug}/task/call/refund/h",
        order_id=order.order_id, amount_cents=100,
    )


@maker("demo_shop.PaymentsFault")
def _payments_fault(rows: TenantRows) -> models.Model:
    return PaymentsFault.objects.create(kind="timeout", armed_by=f"{rows.slug}-operator")


@maker("upstreams.Credential")
def _credential(rows: TenantRows) -> models.Model:
    """Per end user, with one user's token: the inline of its page shows the subject."""
    credential = CredentialFactory(tenant=rows["tenancy.Tenant"], name=f"{rows.slug}-key", per_subject=True,
                                   actor=f"admin:{rows.slug}-staff")
    SubjectCredentialFactory(credential=credential, agent=rows["tenancy.Agent"], subject=f"{rows.slug}-user",
                             value=f"{rows.slug}-token-0000")
    return credential


@maker("upstreams.Upstream")
def _upstream(rows: TenantRows) -> models.Model:
    return UpstreamFactory(
        tenant=rows["tenancy.Tenant"], name=f"{rows.slug}-api", base_url=f"https://api.{rows.slug}.example",
        credential=rows["upstreams.Credential"],
    )


@maker("upstreams.McpLauncher")
def _launcher(rows: TenantRows) -> models.Model:
    """A platform row: its name (which every tenant's upstream form offers) says nothing of a
    tenant, its description, which only superusers see, does."""
    return McpLauncherFactory(description=f"Run for {rows.slug}.")


@maker("catalog.DriftFinding")
def _drift_finding(rows: TenantRows) -> models.Model:
    """Open, on the tenant's tool: the badge, the list and the dashboard all show it."""
    definition = {"name": f"{rows.snake}_lookup", "description": f"{rows.slug} lookups."}
    return DriftFinding.objects.create(
        tenant=rows["tenancy.Tenant"], upstream=rows["upstreams.Upstream"],
        upstream_tool=f"{rows.snake}_lookup", tool=rows["catalog.Tool"], version=rows["catalog.ToolVersion"],
        kind="description", pinned=definition,
        current={**definition, "description": f"{rows.slug} lookups, changed."}, fingerprint="sha256:test",
        detected_at=timezone.now(),
    )


@maker("ledger.CodeRun")
def _code_run(rows: TenantRows) -> models.Model:
    """A run_python run whose code and stdout carry the slug."""
    return code_run(
        version=run_python_version(tenant=rows["tenancy.Tenant"]), agent=rows["tenancy.Agent"],
        code=f"print('{rows.slug}-secret-code')", stdout=f"{rows.slug}-printed\n", task_id=f"{rows.slug}-run",
    )
