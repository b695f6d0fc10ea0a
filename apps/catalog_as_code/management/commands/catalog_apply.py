"""`manage.py catalog_apply FILE [--plan]`: bring a tenant's catalog to what a YAML file says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog_as_code.document import DocumentError, Problem, document_from_yaml
from apps.catalog_as_code.plan import plan_document
from apps.catalog_as_code.selectors import tenant_catalog_snapshot
from apps.catalog_as_code.services import catalog_document_apply
from apps.tenancy.selectors import tenant_by_slug

ACTOR = "cli:catalog_apply"


class Command(BaseCommand):
    help = (
        "Show and make the changes that bring a tenant's catalog to a file written by "
        "catalog_export: new tools and drafts, publishes, deprecations, toolsets, grants, "
        "policies. Published versions never change (a changed definition becomes a new "
        "version). All or nothing, in one transaction; a second run changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The YAML file.")
        parser.add_argument(
            "--plan", action="store_true", help="Show the changes and check them; write nothing."
        )
        parser.add_argument("--tenant", help="Apply to this tenant instead of the file's.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            document = document_from_yaml(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror}.") from error
        except DocumentError as error:
            self._refuse(path, error.problems)
        slug = options["tenant"] or document["tenant"]
        tenant = tenant_by_slug(slug=slug) if isinstance(slug, str) else None
        if tenant is None:
            raise CommandError(f"No tenant with slug {slug!r} (the file's `tenant`, or --tenant).")
        current, context = tenant_catalog_snapshot(tenant=tenant)
        plan = plan_document(wanted=document, current=current, context=context)
        for note in plan.notes:
            self.stderr.write(f"note: {note}")
        if not plan.steps and not plan.problems:
            self.stdout.write(f"No changes: the catalog of {tenant.slug} already matches {path}.")
            return
        self.stdout.write(f"Plan for tenant {tenant.slug}:")
        for step in plan.steps:
            self.stdout.write(f"  {step.text}")
        # Even when the plan is refused, every step is tried (and rolled back), so one run
        # lists every problem: the services' checks and lint as well as the plan's.
        problems = plan.problems + catalog_document_apply(
            tenant=tenant, plan=plan, actor=ACTOR, note=f"catalog_apply {path.name}",
            commit=not (options["plan"] or plan.problems),
        )
        if problems:
            self._refuse(path, problems)
        if options["plan"]:
            self.stdout.write(f"{len(plan.steps)} change(s) checked; nothing was written (--plan).")
        else:
            self.stdout.write(f"Applied {len(plan.steps)} change(s).")

    def _refuse(self, path: Path, problems: tuple[Problem, ...] | list[Problem]) -> None:
        listed = "\n".join(f"  {problem}" for problem in problems)
        raise CommandError(f"{path} was not applied; nothing was written:\n{listed}")
