"""`manage.py seed_demo`: the demo tenant, agent, admin, orders and tools; safe to rerun."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from apps.demo_shop.seed import demo_seed


class Command(BaseCommand):
    help = (
        "Create the demo tenant `demo`, agent `support-bot`, superuser `admin`, the demo order "
        "book and the published demo tools. Idempotent; prints the admin login and agent key."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = demo_seed()
        self.stdout.write(f"ADMIN_USER={result.admin_username}")
        self.stdout.write(f"ADMIN_PASSWORD={result.admin_password}")
        self.stdout.write(f"AGENT_KEY={result.agent_key}")
        if not result.agent_key_active:
            self.stderr.write(
                "The demo agent key was revoked by an operator; issue a new one for support-bot."
            )
        self.stdout.write(
            f"Demo ready: tenant demo, agent support-bot, {result.orders} orders, "
            f"tools {', '.join(result.tools)}; imported from /demo/openapi.json as drafts to review: "
            f"{', '.join(result.imported)}."
        )
