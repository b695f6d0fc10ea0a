"""`manage.py revoke_agent_key --prefix P`: the key is refused from the next request on."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.tenancy.selectors import agent_key_by_prefix
from apps.tenancy.services import agent_key_revoke


class Command(BaseCommand):
    help = "Revoke an agent key by its prefix (shown in the admin and by issue_agent_key)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prefix", required=True, help="The key's prefix (or the full key).")
        parser.add_argument("--note", default="", help="Why; kept in the audit log.")

    def handle(self, *args: Any, **options: Any) -> None:
        key = agent_key_by_prefix(prefix=options["prefix"].strip())
        if key is None:
            raise CommandError(
                f"No agent key with prefix '{options['prefix']}'. The prefix is the 10 hex "
                "characters after 'thk_'; the admin lists every key's prefix."
            )
        if key.revoked_at is not None:
            self.stdout.write(f"Key {key.prefix} of {key.agent} was already revoked at "
                              f"{key.revoked_at.isoformat()}; nothing changed.")
            return
        key = agent_key_revoke(key=key, actor="cli:revoke_agent_key", note=options["note"])
        if key.revoked_at is None:
            raise CommandError(f"Key {key.prefix} is still active after revoking it.")
        self.stdout.write(f"Revoked key {key.prefix} of {key.agent} at {key.revoked_at.isoformat()}.")
