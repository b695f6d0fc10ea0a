"""The corpus of refused calls against the seeded demo over HTTP: a client that reads only
the details' data fields repairs each in one step, and a dry run of the repair passes
(issue 24; the pure version of this check is tests/gateway/test_repair_client.py)."""

from __future__ import annotations

from tests.gateway.miscalls import MISCALLS
from tests.repair_client import apply_repair


def test_every_refused_call_of_the_corpus_passes_a_dry_run_once_repaired(demo):
    failures = []
    for index, miscall in enumerate(MISCALLS):
        # Each in its own task: several repairs are the same call, which the loop guard counts.
        task = f"t-repair-{index}"
        refused = demo.invoke(miscall.tool, miscall.arguments, task_id=task, call_id="c1", dry_run=True)
        assert refused["kind"] == "invalid_args", (miscall.id, refused)
        blind = {"details": refused["details"]}

        repaired = demo.invoke(
            miscall.tool, apply_repair(miscall.arguments, blind), task_id=task, call_id="c2", dry_run=True
        )

        if repaired.get("status") != "ok" or repaired.get("dry_run") is not True:
            failures.append((miscall.id, repaired))
    assert not failures
