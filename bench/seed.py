"""What the benchmark needs beyond `seed_demo`: the bench-only tool, the imported tool
published, refunds for it to list, and orders to cancel.

`bench_wait` is published and granted to the demo agent through the catalog services, like
any tool; so is the draft `seed_demo` imported from the payments provider's OpenAPI
document (`list_order_refunds`), as a curator would after review. The orders to cancel
belong to a user of their own (`u-bench`), so the demo's users and the search benchmark
never see them; they come in slots of numbers, one slot per load run, because an order
can be cancelled only once.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from apps.catalog.models import Tool, VersionStatus
from apps.catalog.selectors import tool_visible_by_name
from apps.catalog.services import tool_save, version_create_draft, version_publish
from apps.demo_shop.models import DemoOrder
from apps.demo_shop.openapi import LIST_ORDER_REFUNDS
from apps.demo_shop.seed import DEMO_AGENT, DEMO_TENANT, DEMO_UPSTREAM
from apps.demo_shop.services import refund_create
from apps.imports.selectors import versions_imported_from
from apps.tenancy.models import Agent, Grant, Tenant
from apps.tenancy.services import grant_save

from .tools import WAIT_CALLABLE

BENCH_USER = "u-bench"
WAIT_TOOL = "bench_wait"
IMPORTED_TOOL = "list_order_refunds"
# A demo order (seed_demo's first; at least 500 cents) with REFUNDS_LISTED refunds of 100
# cents: what the imported tool and its baseline list.
REFUNDED_ORDER = "ORD-000001"
REFUNDS_LISTED = 3
SEED_ACTOR = "bench"
# Order numbers ORD-100000 … ORD-999999 (the tool's pattern allows six digits; the demo
# uses the first 300): nine slots of 100,000.
ORDER_SLOT_SIZE = 100_000
ORDER_SLOTS = 9

BENCH_WAIT: dict[str, Any] = {
    "description": (
        "Waits `ms` milliseconds (1 to 2000) and answers the label it was given. A stand-in "
        "for a slow read in benchmarks; it changes nothing and returns no data worth reading."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "description": "How long to wait, in milliseconds, 1 to 2000.",
            },
            "label": {
                "type": "string",
                "maxLength": 64,
                "description": "Any text up to 64 characters, echoed in the result.",
            },
        },
        "required": ["ms", "label"],
        "additionalProperties": False,
    },
    "side_effect": "readonly",
    "executor": "python",
    "executor_config": {"callable": WAIT_CALLABLE},
    "timeout_s": 5.0,
}


def order_slot(slot: int) -> int:
    """The first order number of `slot` (1 to ORDER_SLOTS)."""
    if not 1 <= slot <= ORDER_SLOTS:
        raise ValueError(f"order slots are 1 to {ORDER_SLOTS}, not {slot}")
    return slot * ORDER_SLOT_SIZE


def order_id(number: int) -> str:
    return f"ORD-{number:06d}"


def bench_seed(*, slots: int = ORDER_SLOTS) -> None:
    """Publish `bench_wait` and grant it to the demo agent, once; publish the imported
    `list_order_refunds` draft and grant it; record the refunds of REFUNDED_ORDER; add the
    bench user's paid orders of the first `slots` slots that are missing. Needs `seed_demo`
    first."""
    tenant = Tenant.objects.get(slug=DEMO_TENANT)
    agent = Agent.objects.get(tenant=tenant, name=DEMO_AGENT)
    with transaction.atomic():
        tool = tool_visible_by_name(tenant=tenant, name=WAIT_TOOL)
        if tool is None:
            tool = tool_save(tool=Tool(name=WAIT_TOOL, tenant=tenant, summary="Benchmarks only."),
                             actor=SEED_ACTOR)
            draft = version_create_draft(
                tool=tool, actor=SEED_ACTOR, changelog="For make bench.", **BENCH_WAIT
            )
            version_publish(version=draft, actor=SEED_ACTOR)
        _grant(tenant=tenant, agent=agent, tool=tool)
        _publish_imported(tenant=tenant, agent=agent)
    for number in range(REFUNDS_LISTED):
        # One key per refund: a rerun replays them and records nothing more.
        refund_create(idempotency_key=f"bench-refund-{number}", order_id=REFUNDED_ORDER, amount_cents=100)
    _insert_orders(first=order_slot(1), last=order_slot(slots) + ORDER_SLOT_SIZE - 1)


def _grant(*, tenant: Tenant, agent: Agent, tool: Tool) -> None:
    if not Grant.objects.filter(tenant=tenant, agent=agent, tool=tool).exists():
        grant_save(grant=Grant(tenant=tenant, agent=agent, tool=tool), actor=SEED_ACTOR, by_platform=True)


def _publish_imported(*, tenant: Tenant, agent: Agent) -> None:
    """Publish the version seed_demo imported from listOrderRefunds (unless already) and
    grant its tool to the agent."""
    version = versions_imported_from(tenant=tenant, upstream=DEMO_UPSTREAM, keys=[LIST_ORDER_REFUNDS]).get(
        LIST_ORDER_REFUNDS
    )
    if version is None:
        raise SystemExit(f"seed_demo imported no {LIST_ORDER_REFUNDS} operation to publish")
    if version.status == VersionStatus.DRAFT:
        version_publish(version=version, actor=SEED_ACTOR, note="Published for make bench.")
    _grant(tenant=tenant, agent=agent, tool=version.tool)


def _insert_orders(*, first: int, last: int) -> None:
    # Generated by PostgreSQL: 900,000 rows in seconds, where the ORM would take minutes.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {DemoOrder._meta.db_table}
                (order_id, user_id, status, amount_cents, currency, placed_on, cancel_reason)
            SELECT 'ORD-' || lpad(n::text, 6, '0'), %(user)s, 'paid', 1000 + n %% 9000, 'EUR',
                   date '2026-01-01' + (n %% 180), ''
            FROM generate_series(%(first)s::integer, %(last)s::integer) AS n
            ON CONFLICT (order_id) DO NOTHING
            """,
            {"user": BENCH_USER, "first": first, "last": last},
        )
        # Statistics now, not when autovacuum gets to it: with a table 3,000 times larger
        # than the planner last saw, the demo's searches would get a plan for 300 rows.
        cursor.execute(f"ANALYZE {DemoOrder._meta.db_table}")
