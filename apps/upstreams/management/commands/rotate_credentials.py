"""`manage.py rotate_credentials`: re-encrypt every credential under the newest key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.upstreams.crypto import InvalidToken
from apps.upstreams.services import credentials_rotate

ACTOR = "cli:rotate_credentials"


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored credential value under the first key of TOOLHUB_ENCRYPTION_KEYS. "
        "Put the new key first, run this, then remove the old keys."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            count = credentials_rotate(actor=ACTOR)
        except InvalidToken:
            raise CommandError(
                "A stored value is readable by none of the keys in TOOLHUB_ENCRYPTION_KEYS; nothing "
                "was changed. Add back the key it was encrypted with (after the new one) and run again."
            ) from None
        self.stdout.write(f"Re-encrypted {count} credential value(s) under the newest key.")
