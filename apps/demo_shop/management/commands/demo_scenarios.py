"""`manage.py demo_scenarios`: give the operator's pages something to show; safe to rerun."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.demo_shop.scenarios import ScenarioFailed, ScenarioResult, ServerNotAnswering, demo_scenarios_run


class Command(BaseCommand):
    help = (
        "Make real calls as the demo agent through the running server (`make run`) that leave a "
        "reconciled timeout, an entry in the triage queue, a pending approval, a refused loop "
        "and capability requests. Needs the web server and a Celery worker; each run adds more."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", help="The running ToolHub (default: make run's, "
                            "http://127.0.0.1:TOOLHUB_PORT).")
        parser.add_argument("--wait", type=float, default=60,
                            help="Seconds to wait for the worker's reconciliation in each scenario.")

    def handle(self, *args: Any, **options: Any) -> None:
        make_runs = f"http://127.0.0.1:{os.environ.get('TOOLHUB_PORT', '8000')}"
        base_url = (options["url"] or make_runs).rstrip("/")
        self.stdout.write(f"Calling {base_url} as support-bot for u-1001 (a refund times out on purpose: "
                          "a few seconds)…")

        def report(result: ScenarioResult) -> None:
            self.stdout.write(f"  {result.name:<20} {result.left}\n"
                              f"  {'':<20} {base_url}/admin/{result.admin_path}")

        try:
            demo_scenarios_run(base_url=base_url, wait_s=options["wait"], report=report)
        except ServerNotAnswering as exc:
            tried = "--url" if options["url"] else "make run's address (no --url given)"
            raise CommandError(f"{exc} Start it, or pass --url with the address of the running "
                               f"ToolHub: this tried {tried}.") from None
        except ScenarioFailed as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Done. The dashboard: {base_url}/admin/dashboard/")
