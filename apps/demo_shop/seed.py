"""Seeding the demo: tenant `demo`, its agent and key, the admin user, the order book, the
demo tools (published, granted, in the `support` toolset), the payments provider as the
platform's upstream, a draft imported from its OpenAPI document, and the shipping MCP server
(seed_shipping.py). Other apps' rows are written through their services, each with its audit
event; a rerun changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from apps.catalog.definitions import platform_settings_named
from apps.catalog.models import Tool, Toolset
from apps.catalog.selectors import tool_visible_by_name, toolset_get
from apps.catalog.services import tool_save, toolset_save, version_create_draft, version_publish
from apps.common.catalog_generation import catalog_changed
from apps.imports.openapi_services import openapi_import
from apps.tenancy.keys import KEY_PREFIX
from apps.tenancy.models import Grant, Tenant
from apps.tenancy.selectors import tenant_by_slug, tool_ids_granted
from apps.tenancy.services import agent_get_or_create, agent_key_install, grant_save, tenant_save
from apps.upstreams.models import CredentialKind, Upstream, UpstreamKind
from apps.upstreams.selectors import credential_get, upstream_get
from apps.upstreams.services import credential_set, upstream_save

from .models import DemoOrder, OrderStatus
from .openapi import LIST_ORDER_REFUNDS, payments_openapi
from .seed_shipping import shipping_seed
from .tool_definitions import DEMO_TOOLS, SUPPORT_PHASES, SUPPORT_TOOLSET

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
    tool = tool_visible_by_name(tenant=tenant, name=name)
    if tool is None:
        tool = tool_save(tool=Tool(name=name, tenant=owner, summary=summary), actor=SEED_ACTOR)
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
    """The tenant's `support` toolset holding the seeded tools, in its phases; what curators
    added since is kept, and a toolset that already holds them all is left alone."""
    toolset = toolset_get(tenant_id=tenant.pk, name=SUPPORT_TOOLSET)
    members: set[Tool] = set(toolset.tools.all()) if toolset else set()
    phases: dict[str, set[Tool]] = (
        {phase.name: set(phase.tools.all()) for phase in toolset.phases.all()} if toolset else {}
    )
    wanted = members | set(tools.values())
    wanted_phases = {**phases}
    for phase_name, tool_names in SUPPORT_PHASES.items():
        wanted_phases[phase_name] = phases.get(phase_name, set()) | {tools[name] for name in tool_names}
    if toolset is not None and wanted == members and wanted_phases == phases:
        return
    toolset_save(
        toolset=toolset or Toolset(
            name=SUPPORT_TOOLSET, tenant=tenant,
            description="Customer support: look orders up, then cancel or refund.",
        ),
        tools=wanted, phases=wanted_phases, actor=SEED_ACTOR,
    )


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
        tenant = tenant_by_slug(slug=DEMO_TENANT) or tenant_save(
            tenant=Tenant(slug=DEMO_TENANT, name="Demo shop"), actor=SEED_ACTOR
        )
        agent = agent_get_or_create(tenant=tenant, name=DEMO_AGENT, actor=SEED_ACTOR)
        stored_key = agent_key_install(agent=agent, key=key, label="demo key (seed_demo)", actor=SEED_ACTOR)
        _seed_admin(password)
        _seed_orders()
        tools = {name: _seed_tool(tenant=tenant, name=name) for name in DEMO_TOOLS}
        tools |= shipping_seed(tenant=tenant, agent_name=DEMO_AGENT, actor=SEED_ACTOR)
        granted = tool_ids_granted(agent=agent)
        for tool in tools.values():
            if tool.pk not in granted:
                grant_save(grant=Grant(tenant=tenant, agent=agent, tool=tool), actor=SEED_ACTOR,
                           by_platform=True)
        _seed_toolset(tenant, tools)
        _seed_payments_upstream()
        imported = _seed_imported_drafts(tenant)
        catalog_changed()  # processes already running must see the seeded tools and toolset
    return SeedResult(
        admin_username=ADMIN_USERNAME, admin_password=password, agent_key=key,
        agent_key_active=stored_key.is_active, orders=DemoOrder.objects.count(),
        tools=tuple(tools), imported=imported,
    )
