"""After the soak's load: waiting for the sweeper and the reconciler to settle what is
uncertain, the audit of the ledger against the demo upstream's own refunds, and the report.
Run inside the soak process once Django is set up."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

from soak.load import Tally


def settle(deadline: float) -> int:
    """Wait for beat's sweeper and reconciler to settle what is uncertain; the count left."""
    from apps.ledger.models import LedgerEntry

    while True:
        open_entries = LedgerEntry.objects.filter(
            state__in=["intent", "unknown"], triage_since__isnull=True
        ).count()
        if not open_entries or time.monotonic() > deadline:
            return open_entries
        time.sleep(2)


def audit() -> tuple[list[str], dict[str, Any]]:
    """Every DemoRefund has a committed ledger row with its key; nothing refunded twice or
    without a row; nothing left in intent; unknown only in the triage queue."""
    from django.db.models import Count

    from apps.demo_shop.models import DemoRefund
    from apps.ledger.models import LedgerEntry

    refunds = dict(
        DemoRefund.objects.values_list("idempotency_key")
        .annotate(n=Count("pk"))
        .values_list("idempotency_key", "n")
    )
    ledger = {
        key: (state, triage_since is not None)
        for key, state, triage_since in LedgerEntry.objects.filter(tool__name="refund_payment").values_list(
            "key", "state", "triage_since"
        )
    }
    problems = []
    problems += [f"refunded {n} times: {key}" for key, n in refunds.items() if n > 1]
    for key in refunds:
        state, in_triage = ledger.get(key, ("missing", False))
        if state != "committed" and not (state == "unknown" and in_triage):
            problems.append(f"refund without a committed ledger row ({state}): {key}")
    for key, (state, in_triage) in ledger.items():
        if state == "committed" and key not in refunds:
            problems.append(f"committed in the ledger, never refunded: {key}")
        if state == "failed" and key in refunds:
            problems.append(f"failed in the ledger, yet refunded: {key}")
        if state == "intent":
            problems.append(f"left in intent: {key}")
        if state == "unknown" and not in_triage:
            problems.append(f"unknown and not in triage: {key}")
    all_states = Counter(LedgerEntry.objects.values_list("state", flat=True))
    figures = {
        "refunds": len(refunds),
        "ledger": dict(all_states),
        "in triage": sum(1 for _, in_triage in ledger.values() if in_triage),
        "stuck outside refund_payment": LedgerEntry.objects.exclude(tool__name="refund_payment")
        .filter(state="intent")
        .count(),
    }
    if figures["stuck outside refund_payment"]:
        problems.append(f"{figures['stuck outside refund_payment']} other entries left in intent")
    return problems, figures


def report(
    tally: Tally, callers: int, elapsed: float, events: list[str], figures: dict[str, Any],
    problems: list[str],
) -> None:
    total = sum(tally.http.values())
    print("\n=================== soak report ===================")
    print(f"load        {elapsed:.0f} s, {callers} callers, {total} requests ({total / elapsed:.1f}/s)")
    print("faults      " + "\n            ".join(events))
    print("http        " + ", ".join(f"{status}: {n}" for status, n in sorted(tally.http.items())))
    print("outcomes")
    for (action, status, kind), n in sorted(tally.outcomes.items(), key=lambda item: (item[0][0], -item[1])):
        print(f"            {action:<13} {status:<17} {kind or '':<16} {n}")
    print(
        "latency     "
        + "\n            ".join(
            f"{action:<13} p50 {statistics.median(values) * 1000:7.1f} ms   "
            f"p99 {sorted(values)[int(len(values) * 0.99)] * 1000:7.1f} ms"
            for action, values in sorted(tally.latencies.items())
        )
    )
    if tally.transport_errors:
        print(f"transport   {dict(tally.transport_errors)}")
    print(
        f"replays     {sum(n for (a, _, _), n in tally.outcomes.items() if a == 'replay')} "
        f"({len(tally.replay_mismatches)} not answering the first result)"
    )
    print(
        f"ledger      {figures['ledger']}; refunds at the upstream: {figures['refunds']}; "
        f"in triage: {figures['in triage']}"
    )
    print("consistency " + ("PERFECT" if not problems else f"{len(problems)} PROBLEMS"))
    for problem in problems[:50]:
        print(f"            - {problem}")
    print("===================================================")
