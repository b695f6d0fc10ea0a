"""`manage.py catalog_apply FILE [--plan]`: bring a tenant's catalog, or the platform's part of
the installation, to what a YAML file says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog_as_code.document import PLATFORM_KIND, DocumentError, Problem
from apps.catalog_as_code.plan import plan_document
from apps.catalog_as_code.platform import catalog_document_from_yaml
from apps.catalog_as_code.platform_plan import plan_platform_document
from apps.catalog_as_code.selectors import (
    credentials_without_value,
    platform_catalog_snapshot,
    tenant_catalog_snapshot,
)
from apps.catalog_as_code.services import catalog_document_apply
from apps.catalog_as_code.steps import Plan
from apps.tenancy.models import Tenant
from apps.tenancy.selectors import tenant_by_slug

ACTOR = "cli:catalog_apply"


class Command(BaseCommand):
    help = (
        "Show and make the changes that bring a tenant's catalog to a file written by "
        "catalog_export: new tools and drafts, publishes, deprecations, toolsets, grants, "
        "policies. Published versions never change (a changed definition becomes a new "
        "version). All or nothing, in one transaction; a second run changes nothing. A file "
        "of kind platform (catalog_export --platform) brings the shared catalog, the platform's "
        "upstreams, the tenants and their agents, and the grants of shared tools: apply it "
        "before the tenants' files."
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
            document = catalog_document_from_yaml(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror}.") from error
        except DocumentError as error:
            self._refuse(path, error.problems)
        if document.get("kind") == PLATFORM_KIND:
            if options["tenant"]:
                raise CommandError(f"{path} is the platform's document, of no tenant: drop --tenant.")
            plan = plan_platform_document(wanted=document, current=platform_catalog_snapshot())
            self._apply(path, plan, None, "the platform", options["plan"])
            return
        slug = options["tenant"] or document["tenant"]
        tenant = tenant_by_slug(slug=slug) if isinstance(slug, str) else None
        if tenant is None:
            raise CommandError(f"No tenant with slug {slug!r} (the file's `tenant`, or --tenant).")
        current, context = tenant_catalog_snapshot(tenant=tenant)
        plan = plan_document(wanted=document, current=current, context=context)
        self._apply(path, plan, tenant, tenant.slug, options["plan"])

    def _apply(self, path: Path, plan: Plan, tenant: Tenant | None, whose: str, only_plan: bool) -> None:
        for note in plan.notes:
            self.stderr.write(f"note: {note}")
        if not plan.steps and not plan.problems:
            self.stdout.write(f"No changes: the catalog of {whose} already matches {path}.")
        else:
            self.stdout.write(f"Plan for {f'tenant {whose}' if tenant else whose}:")
            for step in plan.steps:
                self.stdout.write(f"  {step.text}")
            # Even when the plan is refused, every step is tried (and rolled back), so one run
            # lists every problem: the services' checks and lint as well as the plan's.
            problems = plan.problems + catalog_document_apply(
                tenant=tenant, plan=plan, actor=ACTOR, note=f"catalog_apply {path.name}",
                commit=not (only_plan or plan.problems),
            )
            if problems:
                self._refuse(path, problems)
            if only_plan:
                self.stdout.write(f"{len(plan.steps)} change(s) checked; nothing was written (--plan).")
            else:
                self.stdout.write(f"Applied {len(plan.steps)} change(s).")
        if only_plan:
            return
        who = "a superuser" if tenant is None else "an operator"
        for name in credentials_without_value(tenant=tenant):
            self.stderr.write(self.style.WARNING(
                f"Credential {name} of {whose} has no value: calls through its upstreams fail until "
                f"{who} sets it (admin: Upstreams → Credentials). A file never holds secrets."
            ))

    def _refuse(self, path: Path, problems: tuple[Problem, ...] | list[Problem]) -> None:
        listed = "\n".join(f"  {problem}" for problem in problems)
        raise CommandError(f"{path} was not applied; nothing was written:\n{listed}")
