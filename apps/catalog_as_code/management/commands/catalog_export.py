"""`manage.py catalog_export --tenant SLUG [--out FILE]`: the tenant's catalog as YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog_as_code.document import document_yaml
from apps.catalog_as_code.selectors import tenant_catalog_snapshot
from apps.common.replicas import replica_reads
from apps.tenancy.selectors import tenant_by_slug


class Command(BaseCommand):
    help = (
        "Write a tenant's tools (with every version and its status), toolsets and phases, grants "
        "and policies as YAML, for review in git and `catalog_apply`. Shared tools are named, "
        "not exported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant slug.")
        parser.add_argument("--out", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        with replica_reads():  # an export may lag a little behind the primary
            tenant = tenant_by_slug(slug=options["tenant"])
            if tenant is None:
                raise CommandError(f"No tenant with slug {options['tenant']!r}.")
            document, _ = tenant_catalog_snapshot(tenant=tenant)
        text = document_yaml(document)
        if options["out"]:
            _write(Path(options["out"]), text, suggested=f"{tenant.slug}.yaml")
            self.stderr.write(f"Wrote the catalog of {tenant.slug} to {options['out']}.")
        else:
            self.stdout.write(text, ending="")


def _write(path: Path, text: str, *, suggested: str) -> None:
    """Write the file, making its missing directories; CommandError when it cannot be written."""
    if path.is_dir():
        raise CommandError(f"--out {path} is a directory: name a file, e.g. --out {path / suggested}.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"Cannot write {path}: {exc.strerror or exc}.") from None
