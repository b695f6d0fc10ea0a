"""`manage.py issue_agent_key --tenant T --agent A`: a new key, printed once as AGENT_KEY=…"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.tenancy.selectors import agent_by_name, tenant_by_slug
from apps.tenancy.services import agent_get_or_create, agent_key_issue

ACTOR = "cli:issue_agent_key"


class Command(BaseCommand):
    help = (
        "Issue an API key for an agent. The key is printed once on stdout as AGENT_KEY=<key> "
        "(everything else goes to stderr, so `eval` or `grep` can take it); only its hash is kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant slug.")
        parser.add_argument("--agent", required=True, help="Agent name within the tenant.")
        parser.add_argument("--label", default="", help="Free text to recognize the key later.")
        parser.add_argument(
            "--create-agent", action="store_true", help="Create the agent if it does not exist."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_by_slug(slug=options["tenant"])
        if tenant is None:
            raise CommandError(
                f"No tenant with slug '{options['tenant']}'. Create it in the admin first "
                "(Tenancy → Tenants); slugs are lowercase."
            )
        agent = (
            agent_get_or_create(tenant=tenant, name=options["agent"], actor=ACTOR)
            if options["create_agent"]
            else agent_by_name(tenant=tenant, name=options["agent"])
        )
        if agent is None:
            raise CommandError(
                f"Tenant '{tenant.slug}' has no agent '{options['agent']}'. "
                "Check the name, or pass --create-agent to create it."
            )
        issued = agent_key_issue(agent=agent, label=options["label"], actor=ACTOR)
        self.stderr.write(f"Issued key {issued.key.prefix} for {tenant.slug}/{agent.name}.")
        if not (tenant.active and agent.active):
            self.stderr.write(
                self.style.WARNING(
                    "The tenant or the agent is inactive: this key is refused until both are active."
                )
            )
        self.stdout.write(f"AGENT_KEY={issued.secret}")
        self.stderr.write(
            "Store it now: it is shown only this once. Revoke it with "
            f"`manage.py revoke_agent_key --prefix {issued.key.prefix}`."
        )
