"""apps.ledger owns the side-effect ledger: entries and their events, the transition table,
approvals, reconciliation and the triage queue. It records; only the gateway executes
(execution_hooks.py is how the ledger's admin reaches it).

May import: catalog, tenancy, upstreams, audit, common (layers contract, pyproject.toml);
never gateway.
"""

from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "apps.ledger"
    label = "ledger"
    verbose_name = "Ledger"

    def ready(self) -> None:
        # Django's admin looks for admins in admin.py only; the code runs' admin builds on it
        # from a module of its own, registered here.
        from . import admin_code_runs  # noqa: F401
