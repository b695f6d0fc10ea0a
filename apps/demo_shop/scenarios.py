"""`manage.py demo_scenarios`: real calls that give the operator's pages something to show.

The calls go over HTTP to the running server as the demo agent would make them, so they
run in the server's processes with its egress policy, cache and broker (`make run` sets
these for its own processes only). Reconciliation runs in the Celery worker: this module
enqueues the attempts (as beat would, without waiting out the backoff) and watches the
ledger until each scenario has left what it should. Every run uses new task ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
from django.db.models import Sum
from django.utils import timezone

from apps.gateway.tasks import ledger_reconcile_entry_task
from apps.ledger.models import LedgerEntry, LedgerState
from apps.ledger.services import reconcile_backoff_s

from .models import DemoOrder, DemoRefund, PaymentsFault, PaymentsFaultKind
from .seed import DEMO_TENANT, demo_agent_key
from .services import payments_fault_arm
from .tool_definitions import REFUND_APPROVAL_ABOVE_CENTS

ACTOR = "demo_scenarios"
USER = "u-1001"
SMALL_REFUND_CENTS = 100


class ScenarioFailed(Exception):
    """A scenario did not leave what it should (the server down, no worker, a changed demo)."""


class ServerNotAnswering(ScenarioFailed):
    """Nothing answers at the URL the scenarios were given."""


@dataclass(frozen=True)
class ScenarioResult:
    name: str
    left: str  # what the operator finds, and where
    admin_path: str


class _Agent:
    """The demo agent's backend: the demo key, a session for USER, one task per scenario."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {demo_agent_key()}"}, timeout=30
        )
        try:
            response = self.http.post("/api/v1/sessions", json={"subject": USER})
        except httpx.HTTPError as exc:
            raise ServerNotAnswering(f"ToolHub does not answer at {base_url} ({type(exc).__name__}): "
                                     "is `make run` going?") from None
        if response.status_code != 201:
            raise ScenarioFailed(f"Could not open a session for {USER} ({response.status_code}): "
                                 f"{response.text[:300]}. Has `manage.py seed_demo` run?")
        self.session = response.json()["token"]

    def invoke(
        self, *, task_id: str, call_id: str, name: str, arguments: Any, **extra: Any
    ) -> dict[str, Any]:
        body = {"task_id": task_id, "call": {"id": call_id, "name": name, "arguments": arguments}, **extra}
        response = self.http.post("/api/v1/invoke", json=body, headers={"X-ToolHub-Session": self.session})
        if response.status_code not in (200, 202):
            raise ScenarioFailed(f"{name} answered HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    def close(self) -> None:
        self.http.close()


def _refundable(order: DemoOrder) -> int:
    refunds = DemoRefund.objects.filter(order_id=order.order_id)
    return order.amount_cents - (refunds.aggregate(total=Sum("amount_cents"))["total"] or 0)


def _order_with_most_left(*, above: int = 0) -> tuple[DemoOrder, int]:
    """USER's order with the most left to refund (among those of more than `above` cents)."""
    orders = DemoOrder.objects.filter(user_id=USER, amount_cents__gt=above)
    best = max(((order, _refundable(order)) for order in orders), key=lambda pair: pair[1], default=None)
    if best is None:
        raise ScenarioFailed(f"{USER} has no order of more than {above} cents: has `seed_demo` run?")
    return best


def _wait(predicate: Callable[[], Any], *, wait_s: float, what: str) -> Any:
    deadline = time.monotonic() + wait_s
    while (value := predicate()) is None or value is False:
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"Waited {wait_s:g} s for {what}: is the Celery worker running?")
        time.sleep(0.2)
    return value


def _entry(task_id: str, call_id: str) -> LedgerEntry:
    entry = LedgerEntry.objects.filter(tenant__slug=DEMO_TENANT, task_id=task_id, call_id=call_id).first()
    if entry is None:
        raise ScenarioFailed(f"No ledger entry for task {task_id} call {call_id}.")
    return entry


def _refund(agent: _Agent, task_id: str, amount_cents: int, order: DemoOrder) -> dict[str, Any]:
    return agent.invoke(task_id=task_id, call_id="refund_1", name="refund_payment",
                        arguments={"order_id": order.order_id, "amount_cents": amount_cents})


def reconciled_timeout(agent: _Agent, task_id: str, wait_s: float) -> ScenarioResult:
    """A refund the provider records but answers too late: unknown, then committed."""
    order, _ = _order_with_most_left()
    payments_fault_arm(kind=PaymentsFaultKind.TIMEOUT, actor=ACTOR)
    _refund(agent, task_id, SMALL_REFUND_CENTS, order)
    entry = _entry(task_id, "refund_1")
    if entry.state != LedgerState.UNKNOWN:
        raise ScenarioFailed(f"The timed-out refund is {entry.state}, not unknown.")
    ledger_reconcile_entry_task.delay(str(entry.pk))
    _wait(lambda: LedgerEntry.objects.filter(pk=entry.pk, state=LedgerState.COMMITTED).exists(),
          wait_s=wait_s, what="reconciliation to commit the timed-out refund")
    return ScenarioResult("reconciled timeout", f"refund of {order.order_id}: unknown, then committed by "
                          "reconciliation", f"ledger/ledgerentry/?task_id={task_id}")


def _reconciled_past(entry: LedgerEntry, attempt: int) -> bool:
    """Whether the entry's reconciliation got past `attempt` (or into the triage queue)."""
    return (LedgerEntry.objects.filter(pk=entry.pk)
            .exclude(attempts__lte=attempt, triage_since__isnull=True).exists())


def triage_entry(agent: _Agent, task_id: str, wait_s: float) -> ScenarioResult:
    """A refund that fails after recording while the provider's status checks fail too:
    every reconciliation attempt is unclear, so it ends in the triage queue."""
    order, _ = _order_with_most_left()
    attempts = len(reconcile_backoff_s())
    payments_fault_arm(kind=PaymentsFaultKind.FAIL_AFTER, actor=ACTOR)
    status_faults = payments_fault_arm(kind=PaymentsFaultKind.STATUS_DOWN, actor=ACTOR, times=attempts)
    try:
        _refund(agent, task_id, SMALL_REFUND_CENTS, order)
        entry = _entry(task_id, "refund_1")
        for attempt in range(attempts):
            ledger_reconcile_entry_task.delay(str(entry.pk))
            _wait(partial(_reconciled_past, entry, attempt),
                  wait_s=wait_s, what=f"reconciliation attempt {attempt + 1} of {attempts}")
    finally:
        # Faults this run armed and nobody used would fail someone else's status checks.
        PaymentsFault.objects.filter(pk__in=[f.pk for f in status_faults], used_at__isnull=True).delete()
    entry.refresh_from_db()
    if entry.triage_since is None:
        raise ScenarioFailed(f"The ambiguous refund is {entry.state}, not in the triage queue.")
    return ScenarioResult("entry in triage", f"refund of {order.order_id}: the provider failed after "
                          f"recording and {attempts} status checks failed", "ledger/triageentry/")


def pending_approval(agent: _Agent, task_id: str, wait_s: float) -> ScenarioResult:
    """A refund above the demo's approval threshold: it waits for an operator."""
    order, left = _order_with_most_left(above=REFUND_APPROVAL_ABOVE_CENTS)
    if left <= REFUND_APPROVAL_ABOVE_CENTS:
        # More than what is left is refused before any approval is asked for.
        raise ScenarioFailed(f"No order of {USER} has more than {REFUND_APPROVAL_ABOVE_CENTS} cents left to "
                             f"refund (the most is {left}): start from a fresh demo database.")
    amount = left
    envelope = _refund(agent, task_id, amount, order)
    if envelope.get("status") != "pending_approval":
        answer = f"{envelope.get('status')} {envelope.get('kind', '')}"
        raise ScenarioFailed(f"The large refund answered {answer}, not pending_approval: does "
                             "refund_payment's version have an approval rule? "
                             "(Versions seeded before it had one keep theirs.)")
    return ScenarioResult("pending approval", f"refund of {amount} cents of {order.order_id}: waiting for "
                          "approve or reject", "ledger/pendingapproval/")


def refused_loop(agent: _Agent, task_id: str, wait_s: float) -> ScenarioResult:
    """The same search again and again in one task, until the loop guard refuses it."""
    arguments = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 5}
    for number in range(1, 21):
        envelope = agent.invoke(task_id=task_id, call_id=f"search_{number}", name="search_orders",
                                arguments=arguments)
        if envelope.get("kind") == "loop_detected":
            return ScenarioResult("refused loop", f"search_orders refused as loop_detected at call {number}",
                                  f"audit/invocation/?task_id={task_id}")
    raise ScenarioFailed("20 identical searches in one task and no loop_detected.")


def capability_requests(agent: _Agent, task_id: str, wait_s: float) -> ScenarioResult:
    """Tools the agent wanted and could not call: an unknown one, one outside its phase, and
    one asked for with request_capability."""
    agent.invoke(task_id=task_id, call_id="voucher_1", name="issue_voucher",
                 arguments={"order_id": "ORD-000008", "amount_cents": 500})
    agent.invoke(task_id=task_id, call_id="refund_1", name="refund_payment",
                 toolset="support", phase="lookup", arguments={"order_id": "ORD-000008", "amount_cents": 100})
    agent.invoke(task_id=task_id, call_id="ask_1", name="request_capability", arguments={
        "capability": "export orders as CSV",
        "reason": "The user wants all their 2026 orders in a spreadsheet.",
        "example_arguments": '{"start_date": "2026-01-01", "end_date": "2026-06-30"}',
    })
    return ScenarioResult("capability requests", "issue_voucher (unknown), refund_payment (outside phase "
                          "lookup), export orders as CSV (request_capability)",
                          "capabilities/capabilityrequest/")


SCENARIOS: dict[str, Callable[[_Agent, str, float], ScenarioResult]] = {
    "timeout": reconciled_timeout,
    "triage": triage_entry,
    "approval": pending_approval,
    "loop": refused_loop,
    "capabilities": capability_requests,
}


def demo_scenarios_run(
    *, base_url: str, wait_s: float, report: Callable[[ScenarioResult], None]
) -> list[ScenarioResult]:
    """Run every scenario in order against the server at `base_url` as the demo agent.

    Writes through the server (ledger entries, approvals, capability requests, the invocation
    log) and here (payments faults). Raises ScenarioFailed, naming what is missing, when a
    scenario does not leave its state within `wait_s` seconds.
    """
    run = timezone.now().strftime("%Y%m%d-%H%M%S")
    agent = _Agent(base_url)
    results = []
    try:
        for name, scenario in SCENARIOS.items():
            result = scenario(agent, f"demo-{run}-{name}", wait_s)
            report(result)
            results.append(result)
    finally:
        agent.close()
    return results
