"""The owner options the upstream commands share: --tenant SLUG or --platform."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.db import models

from apps.upstreams.selectors import tenant_by_slug


def add_owner_arguments(parser: CommandParser) -> None:
    owner = parser.add_mutually_exclusive_group(required=True)
    owner.add_argument("--tenant", help="Slug of the owning tenant.")
    owner.add_argument(
        "--platform", action="store_true",
        help="Owned by the platform: usable by every tenant's tools, edited by superusers only.",
    )


def owner_from(options: dict[str, Any]) -> models.Model | None:
    """The tenant the options name, or None for --platform (CommandError: no such tenant)."""
    if options["platform"]:
        return None
    tenant = tenant_by_slug(slug=options["tenant"])
    if tenant is None:
        raise CommandError(
            f"No tenant with slug '{options['tenant']}'. Create it in the admin first "
            "(Tenancy → Tenants); slugs are lowercase."
        )
    return tenant


def refused(error: ValidationError) -> CommandError:
    if hasattr(error, "error_dict"):
        lines = [f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items()]
    else:
        lines = error.messages
    return CommandError("Nothing was saved: " + "; ".join(lines))
