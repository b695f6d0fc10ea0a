"""`manage.py lint_tools`: lint every draft and published tool version and every toolset.

Exits 1 when any finding is an error, so curators can run it in CI.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog.lint import ERROR, INFO, SEVERITY_ORDER, WARNING
from apps.catalog.models import Tool
from apps.catalog.selectors import catalog_findings


class Command(BaseCommand):
    help = "Lint tool definitions and toolsets; exit status 1 when a finding is an error."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Only the tools this tenant sees (its own and the shared ones).")
        parser.add_argument("--tool", action="append", default=[], help="Only this tool (repeatable).")
        parser.add_argument("--min-severity", choices=[ERROR, WARNING, INFO], default=INFO)
        parser.add_argument("--json", action="store_true", help="One JSON object per finding, one a line.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant_id = None
        if options["tenant"]:
            # Tenants are tenancy's, reached through the tool's relation: catalog imports no tenancy.
            tenants = Tool._meta.get_field("tenant").related_model._default_manager
            tenant_id = tenants.filter(slug=options["tenant"]).values_list("pk", flat=True).first()
            if tenant_id is None:
                raise CommandError(f"No tenant with slug {options['tenant']!r}.")
        threshold = SEVERITY_ORDER[options["min_severity"]]
        findings = [
            f for f in catalog_findings(tenant_id=tenant_id)
            if SEVERITY_ORDER[f.severity] <= threshold and (not options["tool"] or f.tool in options["tool"])
        ]
        for finding in findings:
            if options["json"]:
                self.stdout.write(json.dumps(finding.as_dict()))
            else:
                where = f"{finding.tool}: {finding.field}" if finding.tool else finding.field
                self.stdout.write(f"{finding.severity.upper():7} {where} [{finding.code}]\n"
                                  f"        why: {finding.why}\n        fix: {finding.fix}")
        errors = sum(f.is_error for f in findings)
        summary = f"{len(findings)} finding(s), {errors} error(s)."
        if errors:
            self.stderr.write(summary)
            raise SystemExit(1)
        self.stderr.write(summary)
