"""Writes of the demo shop: cancelling orders, recording refunds, the test knobs, the seed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import secrets
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from apps.audit.services import audit_record
from apps.catalog.definitions import platform_settings_named
from apps.catalog.models import Tool, Toolset, ToolsetPhase
from apps.catalog.services import tool_save, version_create_draft, version_publish
from apps.common.catalog_generation import catalog_changed
from apps.common.errors import BusinessRuleError
from apps.imports.openapi_services import openapi_import
from apps.tenancy.keys import KEY_PREFIX, digest_of, split_key
from apps.tenancy.models import Agent, AgentKey, Grant, Tenant
from apps.tenancy.services import agent_get_or_create, agent_key_cache_key, grant_save
from apps.upstreams.models import CredentialKind, Upstream, UpstreamKind
from apps.upstreams.selectors import credential_get, upstream_get
from apps.upstreams.services import credential_set, upstream_save

from .models import DemoOrder, DemoRefund, OrderStatus, PaymentsFault, PaymentsFaultKind
from .openapi import LIST_ORDER_REFUNDS, payments_openapi
from .seed_shipping import shipping_seed
from .selectors import (
    STATUS_ENDPOINT_DOWN_CACHE_KEY,
    order_get_for_user,
    refund_get_by_key,
)
from .tool_definitions import DEMO_TOOLS, SUPPORT_PHASES, SUPPORT_TOOLSET

# --- orders ----------------------------------------------------------------------------

CANCELLABLE_STATUSES = (OrderStatus.PENDING, OrderStatus.PAID)


def order_cancel(*, user_id: str, order_id: str, reason: str) -> DemoOrder:
    """Cancel the user's pending or paid order, recording `reason`. Writes the order.

    A conditional UPDATE (only while still pending or paid) makes concurrent cancels of
    one order change it exactly once. Raises NotFoundError when the order is missing or
    another user's, BusinessRuleError when it is already cancelled.
    """
    changed = DemoOrder.objects.filter(
        order_id=order_id, user_id=user_id, status__in=CANCELLABLE_STATUSES
    ).update(status=OrderStatus.CANCELLED, cancel_reason=reason)
    order = order_get_for_user(user_id=user_id, order_id=order_id)
    if not changed:
        raise BusinessRuleError(
            f"Order {order_id} is already cancelled; nothing was changed.",
            hint="Do not call cancel_order for it again: tell the user it is already cancelled. "
            "get_order shows its current state.",
        )
    return order


# --- payments upstream -----------------------------------------------------------------


class RefundRefused(Exception):
    """A documented refusal of the payments provider; nothing was recorded.

    The provider plays a third party with its own error format, so this is not a
    ToolHubError: the http executor maps its status code to an error kind.
    """

    def __init__(self, *, code: str, message: str, http_status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


@dataclass(frozen=True)
class RefundOutcome:
    refund: DemoRefund
    replayed: bool  # True: the key was seen before and this is the first request's refund


def _replay(refund: DemoRefund, *, order_id: str, amount_cents: int) -> RefundOutcome:
    if (refund.order_id, refund.amount_cents) != (order_id, amount_cents):
        raise RefundRefused(
            code="idempotency_key_reused",
            message=f"This Idempotency-Key was already used for a refund of {refund.amount_cents} "
            f"cents on order {refund.order_id}, not {amount_cents} cents on {order_id}. "
            "Use a new key for a different refund.",
            http_status=409,
        )
    return RefundOutcome(refund=refund, replayed=True)


def _locked_order(*, order_id: str, amount_cents: int, user_id: str | None) -> DemoOrder:
    """The order to refund, its row locked until the refund is recorded (concurrent refunds
    of one order are counted one after the other)."""
    if amount_cents < 1:
        raise RefundRefused(
            code="invalid_amount",
            message=f"amount_cents must be at least 1, got {amount_cents}.", http_status=422,
        )
    orders = DemoOrder.objects.select_for_update().filter(order_id=order_id)
    if user_id is not None:
        orders = orders.filter(user_id=user_id)
    order = orders.first()
    if order is None:
        raise RefundRefused(
            code="order_not_found", message=f"No order {order_id} exists for this customer.",
            http_status=404,
        )
    return order


def _check_refundable(*, order: DemoOrder, amount_cents: int) -> None:
    """Refuse a refund past what is left of the order: its amount less earlier refunds."""
    if amount_cents > order.amount_cents:
        raise RefundRefused(
            code="amount_exceeds_order",
            message=f"amount_cents {amount_cents} is more than the order's amount "
            f"({order.amount_cents} cents).",
            http_status=422,
        )
    refunded = (
        DemoRefund.objects.filter(order_id=order.order_id).aggregate(total=Sum("amount_cents"))["total"] or 0
    )
    refundable = order.amount_cents - refunded
    if amount_cents > refundable:
        raise RefundRefused(
            code="amount_exceeds_refundable",
            message=(
                f"Order {order.order_id} is already refunded in full ({refunded} cents); nothing is "
                "left to refund."
                if refundable <= 0 else
                f"Only {refundable} cents of order {order.order_id} are left to refund ({refunded} of "
                f"its {order.amount_cents} cents are already refunded), not {amount_cents}."
            ),
            http_status=409,
        )


def refund_create(
    *, idempotency_key: str, order_id: str, amount_cents: int, user_id: str | None = None
) -> RefundOutcome:
    """Record a refund once per idempotency key. Writes a DemoRefund.

    A replay of a key answers the first refund; the unique constraint on the key, not the
    lookup before it, is what keeps concurrent duplicates to one row. When `user_id` is
    given (ToolHub sends the session's), the order must be that user's. The refunds of an
    order never add up to more than its amount (its row is locked while one is recorded).
    Raises RefundRefused: order_not_found, invalid_amount, amount_exceeds_order,
    amount_exceeds_refundable (409, naming what is left), or idempotency_key_reused when
    the key came with another order or amount.
    """
    existing = refund_get_by_key(idempotency_key=idempotency_key)
    if existing is not None:
        return _replay(existing, order_id=order_id, amount_cents=amount_cents)
    try:
        with transaction.atomic():
            order = _locked_order(order_id=order_id, amount_cents=amount_cents, user_id=user_id)
            # A duplicate of this request may have been recorded while we waited for the lock.
            if (existing := refund_get_by_key(idempotency_key=idempotency_key)) is not None:
                return _replay(existing, order_id=order_id, amount_cents=amount_cents)
            _check_refundable(order=order, amount_cents=amount_cents)
            refund = DemoRefund.objects.create(
                refund_id=f"re_{secrets.token_hex(12)}", idempotency_key=idempotency_key,
                order_id=order_id, amount_cents=amount_cents,
            )
    except IntegrityError:
        winner = refund_get_by_key(idempotency_key=idempotency_key)
        if winner is None:
            raise
        return _replay(winner, order_id=order_id, amount_cents=amount_cents)
    return RefundOutcome(refund=refund, replayed=False)


def set_status_endpoint_down(down: bool) -> None:
    """Test knob: while down, GET /demo/payments/refunds answers 503 (shared through the cache)."""
    if down:
        cache.set(STATUS_ENDPOINT_DOWN_CACHE_KEY, True, timeout=None)
    else:
        cache.delete(STATUS_ENDPOINT_DOWN_CACHE_KEY)


def payments_fault_arm(*, kind: str, actor: str, times: int = 1) -> list[PaymentsFault]:
    """Arm `times` one-shot faults of `kind` for the payments upstream. Writes the faults and
    an audit event; the next matching requests consume them, oldest first."""
    with transaction.atomic():
        faults = [PaymentsFault.objects.create(kind=kind, armed_by=actor) for _ in range(times)]
        audit_record(actor=actor, action="demo_payments.fault_arm", target=faults[0],
                     data={"kind": kind, "times": times})
    return faults


def payments_fault_take(*, kinds: tuple[str, ...]) -> str | None:
    """Consume the oldest armed fault of one of `kinds`; its kind, or None when none is armed.

    A conditional UPDATE claims it, so two concurrent requests never take the same fault.
    """
    while True:
        fault_id = (
            PaymentsFault.objects.filter(kind__in=kinds, used_at__isnull=True)
            .order_by("created_at", "pk").values_list("pk", flat=True).first()
        )
        if fault_id is None:
            return None
        if PaymentsFault.objects.filter(pk=fault_id, used_at__isnull=True).update(used_at=timezone.now()):
            return PaymentsFault.objects.values_list("kind", flat=True).get(pk=fault_id)


REFUND_FAULTS = (PaymentsFaultKind.TIMEOUT, PaymentsFaultKind.FAIL_AFTER, PaymentsFaultKind.FAIL_BEFORE)


# --- seed ------------------------------------------------------------------------------

DEMO_TENANT = "demo"
DEMO_AGENT = "support-bot"
ADMIN_USERNAME = "admin"
DEMO_USERS = ("u-1001", "u-2002", "u-3003")
ORDER_COUNT = 300
ORDER_RANDOM_SEED = 20260101
ORDERS_FROM = date(2026, 1, 1)
ORDERS_TO = date(2026, 6, 30)
_STATUS_WEIGHTS = {OrderStatus.PAID: 6, OrderStatus.PENDING: 2, OrderStatus.CANCELLED: 2}
SEED_ACTOR = "seed_demo"
# The demo payments provider as an upstream: the platform's, with the platform's key as its
# credential, so a tenant's curators can call it but never attach the key to another host.
DEMO_UPSTREAM = "demo-payments"
DEMO_UPSTREAM_CREDENTIAL = "demo-payments-key"


@dataclass(frozen=True)
class SeedResult:
    admin_username: str
    admin_password: str
    agent_key: str
    agent_key_active: bool  # False when an operator revoked the demo key since
    orders: int
    tools: tuple[str, ...]
    imported: tuple[str, ...]  # drafts made by the OpenAPI importer from the provider's document


def _derived(purpose: str) -> bytes:
    """A secret derived from SECRET_KEY: the same on every run, unguessable without it."""
    message = f"toolhub.demo_shop.{purpose}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()


def demo_admin_password() -> str:
    """TOOLHUB_ADMIN_PASSWORD if set, otherwise derived from SECRET_KEY."""
    return settings.TOOLHUB_ADMIN_PASSWORD or base64.urlsafe_b64encode(
        _derived("admin-password")
    ).decode()[:20]


def demo_agent_key() -> str:
    """The support-bot's key, derived from SECRET_KEY and shaped like every agent key."""
    lookup = _derived("agent-key-prefix").hex()[:10]
    secret = base64.urlsafe_b64encode(_derived("agent-key-secret")).rstrip(b"=").decode()
    return f"{KEY_PREFIX}{lookup}_{secret}"


def demo_orders() -> list[DemoOrder]:
    """The demo order book (unsaved), the same on every call: ids follow the dates."""
    rng = random.Random(ORDER_RANDOM_SEED)
    span = (ORDERS_TO - ORDERS_FROM).days
    dates = sorted(ORDERS_FROM + timedelta(days=rng.randint(0, span)) for _ in range(ORDER_COUNT))
    statuses, weights = list(_STATUS_WEIGHTS), list(_STATUS_WEIGHTS.values())
    orders = []
    for number, placed_on in enumerate(dates, start=1):
        status = rng.choices(statuses, weights)[0]
        orders.append(DemoOrder(
            order_id=f"ORD-{number:06d}", user_id=rng.choice(DEMO_USERS), status=status,
            amount_cents=rng.randint(500, 50_000), placed_on=placed_on,
            cancel_reason="customer_request" if status == OrderStatus.CANCELLED else "",
        ))
    return orders


def _seed_admin(password: str) -> None:
    user, _ = get_user_model().objects.get_or_create(
        username=ADMIN_USERNAME, defaults={"email": "admin@example.com"}
    )
    # Only touch the row when the printed credentials would not work as they are.
    if not (user.is_active and user.is_staff and user.is_superuser and user.check_password(password)):
        user.is_active = user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()


def _seed_agent_key(agent: Agent, key: str) -> AgentKey:
    prefix = split_key(key)
    if prefix is None:
        raise ValueError("The demo agent key is not shaped like an agent key.")
    existing = AgentKey.objects.filter(prefix=prefix).first()
    if existing is not None:
        return existing
    created = AgentKey.objects.create(
        tenant_id=agent.tenant_id, agent=agent, label="demo key (seed_demo)", prefix=prefix,
        digest=digest_of(key),
    )
    audit_record(
        tenant_id=agent.tenant_id, actor=SEED_ACTOR, action="agent_key.issue", target=created,
        data={"agent": agent.name, "prefix": prefix},
    )
    # A lookup of this prefix before the seed may have cached "no such key".
    transaction.on_commit(lambda: cache.delete(agent_key_cache_key(prefix)))
    return created


def _seed_orders() -> None:
    orders = demo_orders()
    present = set(
        DemoOrder.objects.filter(order_id__in=[o.order_id for o in orders])
        .values_list("order_id", flat=True)
    )
    # Orders already there keep their state: the demo may have cancelled some.
    DemoOrder.objects.bulk_create([o for o in orders if o.order_id not in present])


def _seed_tool(*, tenant: Tenant, name: str) -> Tool:
    definition = dict(DEMO_TOOLS[name])
    summary = definition.pop("summary")
    # A tool that uses the platform's secret (the payments key) must be the platform's: the
    # shared catalog, granted to the demo tenant (README "Configuration", the secrets rule).
    owner = None if platform_settings_named(
        executor=definition["executor"], executor_config=definition["executor_config"]
    ) else tenant
    tool = Tool.objects.filter(Q(tenant=tenant) | Q(tenant__isnull=True), name=name).first()
    if tool is None:
        tool = Tool.objects.create(name=name, tenant=owner, summary=summary)
    elif tool.tenant_id != (owner.pk if owner else None):
        # Seeded by an earlier release as the tenant's own: its calls would now be refused.
        tool.tenant = owner
        tool_save(tool=tool, actor=SEED_ACTOR)
    if tool.versions.exists():
        return tool  # published versions never change; later versions are the curators'
    draft = version_create_draft(
        tool=tool, actor=SEED_ACTOR, changelog="First version, published by seed_demo.", **definition
    )
    version_publish(version=draft, actor=SEED_ACTOR)
    return tool


def _seed_toolset(tenant: Tenant, tools: dict[str, Tool]) -> None:
    toolset, _ = Toolset.objects.get_or_create(
        name=SUPPORT_TOOLSET,
        tenant=tenant,
        defaults={"description": "Customer support: look orders up, then cancel or refund."},
    )
    toolset.tools.add(*tools.values())
    for phase_name, tool_names in SUPPORT_PHASES.items():
        phase, _ = ToolsetPhase.objects.get_or_create(toolset=toolset, name=phase_name)
        phase.tools.add(*(tools[name] for name in tool_names))


def _seed_payments_upstream() -> None:
    """The platform's upstream DEMO_UPSTREAM at TOOLHUB_DEMO_PAYMENTS_URL (moved when the
    server's port moved), with the payments key as its credential; both made once."""
    credential = credential_get(tenant_id=None, name=DEMO_UPSTREAM_CREDENTIAL) or credential_set(
        tenant=None, name=DEMO_UPSTREAM_CREDENTIAL, kind=CredentialKind.BEARER, field="",
        value=settings.TOOLHUB_SECRETS["DEMO_PAYMENTS_API_KEY"], per_subject=False, actor=SEED_ACTOR,
    )
    upstream = upstream_get(tenant_id=None, name=DEMO_UPSTREAM) or Upstream(
        tenant=None, name=DEMO_UPSTREAM, kind=UpstreamKind.HTTP, credential=credential
    )
    if upstream.pk is None or upstream.base_url != settings.TOOLHUB_DEMO_PAYMENTS_URL:
        upstream.base_url = settings.TOOLHUB_DEMO_PAYMENTS_URL
        upstream_save(upstream=upstream, actor=SEED_ACTOR)


def _seed_imported_drafts(tenant: Tenant) -> tuple[str, ...]:
    """The provider's listOrderRefunds operation imported from its OpenAPI document (the one
    /demo/openapi.json serves) as a draft of the tenant, as a curator would: a rerun finds
    it unchanged and makes nothing. It calls the upstream DEMO_UPSTREAM."""
    document = json.dumps(payments_openapi(server_url=settings.TOOLHUB_DEMO_PAYMENTS_URL))
    report = openapi_import(
        tenant=tenant, document_text=document, upstream=DEMO_UPSTREAM, actor=SEED_ACTOR,
        operation_ids=[LIST_ORDER_REFUNDS],
    )
    return tuple(result.tool for result in report.results)


def demo_seed() -> SeedResult:
    """Create what the demo needs, once; a rerun changes nothing.

    Writes (each only when missing): tenant `demo`, agent `support-bot` and its derived
    key, superuser `admin` (password reset only if the printed one would not log in),
    the demo order book, the four demo tools with a published v1, the demo shipping MCP
    server's upstream and its three tools (seed_shipping.py), their grants to support-bot,
    the tenant's `support` toolset with phases `lookup` and `resolve`, and a draft imported
    from the payments provider's OpenAPI document. Audit events for the key,
    each version it publishes and the import.
    """
    password = demo_admin_password()
    key = demo_agent_key()
    with transaction.atomic():
        tenant, _ = Tenant.objects.get_or_create(slug=DEMO_TENANT, defaults={"name": "Demo shop"})
        agent = agent_get_or_create(tenant=tenant, name=DEMO_AGENT)
        stored_key = _seed_agent_key(agent, key)
        _seed_admin(password)
        _seed_orders()
        tools = {name: _seed_tool(tenant=tenant, name=name) for name in DEMO_TOOLS}
        tools |= shipping_seed(tenant=tenant, agent_name=DEMO_AGENT, actor=SEED_ACTOR)
        for tool in tools.values():
            if not Grant.objects.filter(tenant=tenant, agent=agent, tool=tool).exists():
                grant = Grant(tenant=tenant, agent=agent, tool=tool)
                grant_save(grant=grant, actor=SEED_ACTOR, by_platform=True)
        _seed_toolset(tenant, tools)
        _seed_payments_upstream()
        imported = _seed_imported_drafts(tenant)
        catalog_changed()  # processes already running must see the seeded tools and toolset
    return SeedResult(
        admin_username=ADMIN_USERNAME, admin_password=password, agent_key=key,
        agent_key_active=stored_key.is_active, orders=DemoOrder.objects.count(),
        tools=tuple(tools), imported=imported,
    )
