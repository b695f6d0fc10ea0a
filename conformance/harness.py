"""One document, run: imported with ToolHub's own import into a throwaway tenant, every
imported tool published (lint errors noted, then published anyway: a conformance-only
path) and granted to one agent, then called once through REST invoke with generated
arguments against the validating loopback upstream."""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.models import ToolVersion, VersionStatus
from apps.common.catalog_generation import catalog_changed
from apps.imports.errors import ImportRefused
from apps.imports.import_tail import SKIPPED, OperationResult
from apps.imports.openapi_services import openapi_import
from apps.tenancy.models import Agent, Tenant
from apps.tenancy.services import agent_key_issue

from .arguments import NotGenerated, generate_arguments
from .documents import load_document, server_path
from .upstream import Check, ValidatingUpstream
from .validation import HTTP_METHODS, DocumentValidator

ACTOR = "conformance"
UPSTREAM = "conformance"


@dataclass(frozen=True)
class Failure:
    kind: str  # one of report.KINDS
    where: str
    message: str


@dataclass
class DocumentResult:
    name: str
    operations: int = 0
    imported: int = 0
    lint_blocked: int = 0
    sent: int = 0
    valid: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def fail(self, kind: str, where: str, message: str) -> None:
        # One line each, but a traceback keeps its lines: it is read, not counted.
        shown = message.rstrip() if kind == "crash" else " ".join(message.split())
        self.failures.append(Failure(kind=kind, where=where, message=shown))

    def spent(self, step: str, since: float) -> None:
        """Adds the seconds since `since` (time.monotonic()) to `step`."""
        self.seconds[step] = self.seconds.get(step, 0.0) + time.monotonic() - since

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.failures)


@dataclass(frozen=True)
class RunOptions:
    seed: int = 20
    budget_s: float = 2.0


def operation_count(content: dict[str, Any]) -> int:
    """The operations the document declares, whatever ToolHub makes of them."""
    paths = content.get("paths") or {}
    return sum(
        1 for item in paths.values() if isinstance(item, dict)
        for method in HTTP_METHODS if isinstance(item.get(method), dict)
    )


def run_document(
    path: Path, upstream: ValidatingUpstream, options: RunOptions, *, slug: str
) -> DocumentResult:
    result = DocumentResult(name=path.name)
    started = time.monotonic()
    content = load_document(path)
    result.operations = operation_count(content)
    tenant = Tenant.objects.create(slug=slug, name=f"Conformance: {path.name}")
    agent = Agent.objects.create(tenant=tenant, name="conformance-agent")
    base_path = server_path(content)
    try:
        report = openapi_import(
            tenant=tenant, document_text=path.read_bytes(), upstream=UPSTREAM, actor=ACTOR,
            base_url=upstream.url + base_path, grant_agents=[agent.name],
        )
    except ImportRefused as refusal:
        result.fail("refused", path.name, str(refusal))
        return result
    except Exception:  # a traceback in ToolHub's import: reported, and the next document runs
        result.fail("crash", path.name, traceback.format_exc())
        return result
    result.spent("import", started)
    versions = _published(report.results, result)
    result.imported = len(versions)

    started = time.monotonic()
    upstream.validator = DocumentValidator(content, base_path=base_path)
    result.spent("validator", started)

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_key_issue(agent=agent).secret}")
    upstream.take()
    for number, version in enumerate(versions):
        _call(client, version, number, upstream, options, result)
    return result


def _published(results: tuple[OperationResult, ...], result: DocumentResult) -> list[ToolVersion]:
    """The imported drafts, published for conformance. Lint's verdict is the import's own
    (the findings it reports for each draft, computed for all of them at once); a draft with
    lint errors, which version_publish would refuse, is counted and published all the same."""
    drafts = []
    for item in results:
        if item.outcome == SKIPPED or item.version is None:
            result.fail("skipped", item.key, item.reason or "skipped")
            continue
        errors = [f"{f.field}: {f.code}: {f.fix}" for f in item.findings if f.is_error]
        if errors:
            result.lint_blocked += 1
            result.fail("lint-blocked", item.tool, " | ".join(errors))
        drafts.append(item.version)
    return publish_for_conformance(drafts)


def publish_for_conformance(drafts: list[ToolVersion]) -> list[ToolVersion]:
    """Conformance only, never outside this run: the drafts become published without review
    or lint, as the gateway's tests make their tools. version_publish lints each version
    against every tool of its tenant again, which costs minutes on GitHub's 900 operations;
    the run already has the import's findings."""
    chosen = ToolVersion.objects.select_related("tool").filter(pk__in=[d.pk for d in drafts]).order_by("pk")
    chosen.update(status=VersionStatus.PUBLISHED, published_at=timezone.now())
    catalog_changed()
    return list(chosen)


def _call(client: APIClient, version: ToolVersion, number: int, upstream: ValidatingUpstream,
          options: RunOptions, result: DocumentResult) -> None:
    name = version.tool.name
    started = time.monotonic()
    try:
        arguments = generate_arguments(version.parameters, run_seed=options.seed + number,
                                       budget_s=options.budget_s)
    except NotGenerated as reason:
        result.fail("not-generated", name, str(reason))
        return
    finally:
        result.spent("arguments", started)
    started = time.monotonic()
    body = {"task_id": f"conformance-{number}", "call": {"id": "call-1", "name": name,
                                                          "arguments": json.dumps(arguments)}}
    try:
        response = client.post("/api/v1/invoke", body, format="json")
        answer = response.json()
    except Exception:  # a traceback in ToolHub is the one failure that fails the run
        result.fail("crash", name, traceback.format_exc())
        return
    finally:
        result.spent("invoke", started)
    _record(upstream.take(), name, arguments, result)
    if response.status_code != 200 or answer.get("status") not in ("ok", "empty"):
        result.fail("invoke-error", name, _invoke_message(response.status_code, answer))


def _record(checks: list[Check], name: str, arguments: dict[str, Any], result: DocumentResult) -> None:
    for check in checks:
        result.sent += 1
        if not check.errors:
            result.valid += 1
            continue
        shown = json.dumps(arguments, ensure_ascii=True)
        shown = shown if len(shown) <= 300 else shown[:300] + "…"
        result.fail("invalid", name, f"{check.method} {check.target[:300]} — {' | '.join(check.errors)}"
                                     f" — arguments {shown}")


def _invoke_message(status: int, answer: Any) -> str:
    """The envelope's kind and message (and the fields it names), else the raw answer."""
    if isinstance(answer, dict) and answer.get("message"):
        details = [f"{d.get('path', '')} {d.get('problem', '')}".strip()
                   for d in answer.get("details") or [] if isinstance(d, dict)]
        return f"{answer.get('kind', f'HTTP {status}')}: {answer['message']}" + (
            f" ({'; '.join(details)})" if details else "")
    return f"HTTP {status}: {json.dumps(answer)[:300]}"
