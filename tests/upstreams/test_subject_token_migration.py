"""The migration that gives each end user's token its agent: tokens stored before are given
the agent their audit event names; a token no event attributes is deleted."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = ("upstreams", "0002_drift_checks_and_status_tool")
AFTER = ("upstreams", "0003_subject_credential_agent")


def _migrate(upstreams_at: tuple[str, str] | None):
    """Every app at its latest migration but upstreams, at `upstreams_at` (None: its latest
    too); the models then."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    targets = latest if upstreams_at is None else [upstreams_at, *(n for n in latest if n[0] != "upstreams")]
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_tokens_stored_before_are_given_the_agent_that_registered_them():
    # given tokens stored the old way: one registered by acme's bot, one whose event is gone
    old = _migrate(BEFORE)
    try:
        tenant = old.get_model("tenancy", "Tenant").objects.create(slug="acme", name="Acme")
        bot = old.get_model("tenancy", "Agent").objects.create(tenant=tenant, name="bot")
        credential = old.get_model("upstreams", "Credential").objects.create(
            tenant=tenant, name="crm", kind="bearer", per_subject=True
        )
        tokens = old.get_model("upstreams", "SubjectCredential").objects
        for subject in ("u-1", "u-2"):
            tokens.create(credential=credential, subject=subject, ciphertext="x", changed_at=timezone.now())
        old.get_model("audit", "AuditEvent").objects.create(
            tenant=tenant, actor=f"agent:{bot.pk}", action="credential.subject_set",
            target_type="upstreams.Credential", target_id=str(credential.pk),
            data={"name": "crm", "subject": "u-1"},
        )

        # when the migration runs
        new = _migrate(AFTER)

        # then u-1's token is the bot's, and the unattributed u-2's is gone
        rows = new.get_model("upstreams", "SubjectCredential").objects.values_list("subject", "agent_id")
        assert list(rows) == [("u-1", bot.pk)]
    finally:
        # The schema the other tests expect: upstreams' later migrations too.
        _migrate(None)
