"""PostgreSQL's CPU for the ledger's part of one governed write, without the rest of the call.

    python -m bench.ledger_cpu [calls]    after `make profile` has seeded the bench database

bench/write_cpu.py reads the whole write (the request, the tool's own statements, the
invocation log), in which a few hundredths of a millisecond of the ledger's are lost in the
noise of a shared machine. This calls only the ledger's services as the invoke path does
(apps/gateway/execution.py): an intent, then its outcome, `committed`, each its own
statement and commit, on one connection, and reads the CPU time of the bench database's
server processes (bench/cpu.py) and of this process per pair.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from .config import ENV
from .cpu import database_cpu_seconds


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    os.environ.update(ENV)
    import django

    django.setup()
    from apps.catalog.models import ToolVersion
    from apps.ledger.models import LedgerState
    from apps.ledger.services import IntentSpec, ledger_open_intent, ledger_record_outcome
    from apps.tenancy.models import Agent


    agent = Agent.objects.get(tenant__slug="demo", name="support-bot")
    version = ToolVersion.objects.filter(tool__name="cancel_order").latest("number")
    arguments = {"order_id": "ORD-100000", "reason": "the customer changed their mind"}
    result = {"order_id": "ORD-100000", "status": "cancelled", "amount": "129.00", "currency": "EUR"}
    run = uuid.uuid4().hex[:8]

    def write(i: int) -> None:
        task_id, args_hash = f"l-{run}-{i}", f"{i:064x}"
        opened = ledger_open_intent(
            spec=IntentSpec(
                tenant_id=agent.tenant_id, agent_id=agent.pk,
                key=f"demo/{task_id}/c1/cancel_order/{args_hash}", task_id=task_id, call_id="c1",
                tool_id=version.tool_id, version_id=version.pk, subject="u-bench",
                args_hash=args_hash, arguments=arguments,
            ),
            actor="agent:bench",
        )
        ledger_record_outcome(
            entry=opened.entry, to_state=LedgerState.COMMITTED, actor="executor:python", result=result
        )

    for i in range(200):  # past psycopg's threshold for preparing a statement
        write(-1 - i)
    start_postgres, start_cpu = database_cpu_seconds(), time.process_time()
    for i in range(calls):
        write(i)
    postgres = (database_cpu_seconds() - start_postgres) / calls * 1000
    app = (time.process_time() - start_cpu) / calls * 1000
    print(f"ledger intent + outcome, {calls} writes, CPU per write: "
          f"PostgreSQL {postgres:.3f} ms + this process {app:.3f} ms")


if __name__ == "__main__":
    main()
