"""`manage.py set_credential NAME --tenant SLUG --kind bearer|basic|header|query|env
[--field NAME] [--per-subject]`: create or update a credential, its value read from standard input."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandParser

from apps.upstreams.models import CredentialKind
from apps.upstreams.services import credential_set

from ._owner import add_owner_arguments, owner_from, refused

ACTOR = "cli:set_credential"


def _read_value() -> str:
    # Never an argument: command lines end up in shell histories and `ps`.
    if sys.stdin.isatty():
        return getpass.getpass("Value (not echoed): ")
    return sys.stdin.read().rstrip("\r\n")


class Command(BaseCommand):
    help = (
        "Create or update a credential; its value is read from standard input (a prompt on a "
        "terminal), stored encrypted and never shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The credential's name, e.g. orders-api-key.")
        add_owner_arguments(parser)
        parser.add_argument("--kind", choices=CredentialKind.values, required=True)
        parser.add_argument(
            "--field", default="",
            help="Header name (kind header), query parameter name (kind query) or environment "
            "variable of a stdio MCP server (kind env).",
        )
        parser.add_argument(
            "--per-subject", action="store_true",
            help="Each end user's own token, registered through the API; reads no value.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = owner_from(options)
        value = "" if options["per_subject"] else _read_value()
        try:
            credential = credential_set(
                tenant=tenant, name=options["name"], kind=options["kind"], field=options["field"],
                value=value, per_subject=options["per_subject"], actor=ACTOR,
            )
        except ValidationError as error:
            raise refused(error) from None
        stored = (
            "each end user registers their own" if credential.per_subject
            else f"stored encrypted{', ends in …' + credential.last4 if credential.last4 else ''}"
        )
        self.stdout.write(f"Credential {credential.name} ({credential.kind}): {stored}.")
