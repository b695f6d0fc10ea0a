"""The try-it console: one real call through the whole invoke pipeline, as an agent would make
it, so a curator sees exactly the envelope the model would read. It lives above every app it
uses (catalog, tenancy, gateway), as a leaf."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import re2
from django.core.exceptions import ValidationError
from django.db import transaction
from jsonschema.exceptions import SchemaError

from apps.audit.services import audit_record
from apps.catalog.models import SideEffect, ToolVersion
from apps.common.errors import ToolHubError
from apps.common.schemas.patterns import FORMAT_CHECKER, ToolSchemaValidator
from apps.gateway.contracts import ToolCall
from apps.gateway.selectors import agent_catalog, resolve_tool
from apps.gateway.services import InvokeOptions, invoke_one
from apps.tenancy.authentication import AgentPrincipal
from apps.tenancy.models import Agent
from apps.tenancy.services import session_mint

CONSOLE_SESSION_TTL_S = 300
# The demo shop's first month of orders, so that a sample search of the demo finds some.
SAMPLE_START_DATE, SAMPLE_END_DATE = "2026-01-01", "2026-01-31"


def sample_arguments(parameters: Mapping[str, Any], bindings: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments to start from, each one its field accepts: the first enum value, the schema's
    example, lower bounds, a month with demo data for dates; a field no such value fits (a
    pattern without an example) is left for the curator to fill. Bound fields are left out:
    the session fills them, as for a model."""
    samples = {}
    for name, node in (parameters.get("properties") or {}).items():
        if name in bindings or not isinstance(node, Mapping):
            continue
        sample = _sample(node, name)
        if sample is not _NOTHING:
            samples[name] = sample
    return samples


_NOTHING = object()  # no value to suggest for a field


def _accepted(node: Mapping[str, Any], *candidates: Any) -> Any:
    """The first candidate the field's schema accepts, else _NOTHING."""
    try:
        validator = ToolSchemaValidator(node, format_checker=FORMAT_CHECKER)
        return next((value for value in candidates if validator.is_valid(value)), _NOTHING)
    except (SchemaError, re2.error, TypeError, ValueError):  # a schema lint flags; suggest nothing
        return _NOTHING


def _sample(node: Mapping[str, Any], name: str = "") -> Any:
    if node.get("enum"):
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    examples = node.get("examples")
    given = [*(examples if isinstance(examples, list) else []),
             *([node["example"]] if "example" in node else [])]
    kind = node.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    if kind == "integer" or kind == "number":
        return _accepted(node, *given, node.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return _accepted(node, *given, [])
    if kind == "object":
        sampled = {key: _sample(sub, key) for key, sub in (node.get("properties") or {}).items()
                   if isinstance(sub, Mapping)}
        return {key: value for key, value in sampled.items() if value is not _NOTHING}
    if node.get("format") == "date" or "\\d{4}-\\d{2}-\\d{2}" in str(node.get("pattern", "")):
        date = SAMPLE_END_DATE if "end" in name or name.endswith(("_to", "until")) else SAMPLE_START_DATE
        return _accepted(node, *given, date)
    return _accepted(node, *given, "example")


def version_try(
    *, version: ToolVersion, agent: Agent, subject: str, arguments: str, real: bool, actor: str
) -> dict[str, Any]:
    """Run one call of `version`'s tool as `agent` for the end user `subject`; return its envelope.

    A dry run stops after validation; a real call runs only when the version the agent would
    call is readonly (ValidationError otherwise). The call is written to the invocation log
    like any other; an audit event records who tried what.
    """
    principal = AgentPrincipal(agent_id=agent.pk, agent_name=agent.name, tenant_id=agent.tenant_id,
                               tenant_slug=agent.tenant.slug, key_id=0)
    if real:
        try:
            catalog = agent_catalog(tenant_id=agent.tenant_id, agent_id=agent.pk)
            resolved = resolve_tool(catalog=catalog, name=version.tool.name, toolset=None, phase=None)
        except ToolHubError:
            resolved = None  # the pipeline answers with the error the model would see
        if resolved is not None and resolved.side_effect != SideEffect.READONLY:
            raise ValidationError(
                f"{agent.name} would call v{resolved.number}, a {resolved.side_effect} tool: only readonly "
                "tools run for real from the console. Use a dry run."
            )
    token = None
    if subject.strip():
        token, _ = session_mint(tenant_id=agent.tenant_id, agent_id=agent.pk, subject=subject.strip(),
                                attributes={}, ttl_s=CONSOLE_SESSION_TTL_S)
    task_id = f"console-{uuid.uuid4().hex[:12]}"
    envelope = invoke_one(
        principal=principal, session_token=token,
        options=InvokeOptions(task_id=task_id, dry_run=not real),
        call=ToolCall(call_id="console_1", name=version.tool.name, arguments=arguments),
    )
    with transaction.atomic():
        audit_record(
            tenant_id=agent.tenant_id, actor=actor, action="tool_version.try", target=version,
            data={"agent": agent.name, "subject": subject.strip(), "real": real, "task_id": task_id,
                  "status": envelope.get("status"), "kind": envelope.get("kind", "")},
        )
    return envelope
