"""The catalog as code: one tenant's tools, versions, toolsets, grants and policies as a YAML
document. Pure: no queries and no writes. The document is built from rows a selector
loaded (`tenant_catalog_snapshot`); `as_code_plan` turns a document into the service calls
that bring the database to it, and `catalog_document_apply` makes them.

What a document holds, and what applying it means:

- `tools`: the tenant's own tools by name, each with its versions by number (with status).
  Shared tools are never exported as the tenant's: toolsets, grants and policies name them,
  and a tenant's document can hold no tool that names a platform setting (those are
  shared-only). Applying creates missing tools and drafts, edits drafts, and moves versions
  forward (publish, deprecate, retire). A published version never changes: a changed
  definition becomes a new draft, published if the document says so. Apply never deletes a
  tool or a version.
- `upstreams`: the tenant's upstreams, never a credential's value (upstreams.py). Apply
  creates and updates them, never deletes one.
- `toolsets`, `grants`, `policies`: when a section is present it is the whole truth for the
  tenant (what it does not list is deleted); when it is absent, that kind is left alone.
  `grants` holds the grants of the tenant's own tools: shared tools are granted by the
  platform only, in its document.

The platform's part (shared tools, platform upstreams, tenants and agents, grants of shared
tools) is a document of its own, of `kind: platform` (platform.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import models

from apps.catalog.models import Tool, Toolset, ToolVersion, VersionStatus
from apps.tenancy.models import TenantPolicy

from .checks import DocumentError, Problem, expect, problems_of, unknown_keys
from .toolsets import check_toolsets, toolsets_section
from .upstreams import check_upstreams, upstreams_section

FORMAT = 1
# Everything a version's document entry holds besides its number and status.
VERSION_FIELDS = tuple(
    sorted([f for f in ToolVersion.CONTENT_FIELDS if f not in ("tool_id", "number")] + ["changelog"])
)
# What decides whether two versions make the same promise (the changelog does not).
PROMISE_FIELDS = tuple(f for f in VERSION_FIELDS if f != "changelog")
POLICY_FIELDS = (
    "daily_quota_per_subject", "max_opened_per_task", "open_on_request", "rate_limit_per_minute",
    "requires_approval", "rule_overrides", "task_call_budget",
)
# Written only when they differ from their default, so a file that predates them (and its
# export) reads the same: what request_capability may open, and how many per task.
OPTIONAL_POLICY_FIELDS = frozenset({"max_opened_per_task", "open_on_request"})
SECTIONS = ("tools", "toolsets", "upstreams", "grants", "policies")
# The `kind` of the platform's document (platform.py); a tenant's document has none.
PLATFORM_KIND = "platform"
_JSON_FIELDS = frozenset(
    f.name for f in ToolVersion._meta.get_fields() if f.get_internal_type() == "JSONField"
)


# --- models → document ---------------------------------------------------------------------


def _sorted(value: Any) -> Any:
    """JSON content with every mapping's keys sorted, so equal content always reads the same."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def version_entry(version: ToolVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "status": version.status,
        **{name: _sorted(getattr(version, name)) for name in VERSION_FIELDS},
    }


def tools_section(tools: Iterable[Tool]) -> dict[str, Any]:
    """Tools by name, each with its versions (prefetched) by number."""
    return {
        tool.name: {
            "summary": tool.summary,
            "replaced_by": tool.replaced_by.name if tool.replaced_by is not None else None,
            "versions": [version_entry(v) for v in sorted(tool.versions.all(), key=lambda v: v.number)],
        }
        for tool in sorted(tools, key=lambda t: t.name)
    }


def tenant_document(
    *, tenant_slug: str, tools: Iterable[Tool], toolsets: Iterable[Toolset], upstreams: Iterable[Any],
    grants: Iterable[Any], policies: Iterable[Any],
) -> dict[str, Any]:
    """The document of one tenant's catalog. Expects tools with `versions` and toolsets with
    `tools` and `phases__tools` prefetched, upstreams with their credential, grants and
    policies with their tool, agent and pinned version selected."""
    return {
        "format": FORMAT,
        "tenant": tenant_slug,
        "tools": tools_section(tools),
        "toolsets": toolsets_section(toolsets),
        "upstreams": upstreams_section(upstreams),
        "grants": sorted(
            (
                {
                    "tool": grant.tool.name,
                    "agent": grant.agent.name if grant.agent_id else None,
                    "pinned_version": grant.pinned_version.number if grant.pinned_version_id else None,
                }
                for grant in grants
            ),
            key=grant_key,
        ),
        "policies": sorted(
            (
                policy_entry(policy)
                for policy in policies
            ),
            key=lambda p: p["tool"] or "",
        ),
    }


def policy_default(name: str) -> Any:
    return _model_field(TenantPolicy, name).get_default()


def policy_entry(policy: TenantPolicy) -> dict[str, Any]:
    """A policy as the document writes it: every limit, the optional ones when not default."""
    values = {name: _sorted(getattr(policy, name)) for name in POLICY_FIELDS}
    return {"tool": policy.tool.name if policy.tool is not None else None, **{
        name: value for name, value in values.items()
        if name not in OPTIONAL_POLICY_FIELDS or value != policy_default(name)
    }}


def grant_key(grant: Mapping[str, Any]) -> tuple[str, str]:
    return grant["tool"], grant["agent"] or ""


class _Dumper(yaml.SafeDumper):
    """Keeps the document's key order (already sorted where order means nothing) and writes
    text with line breaks as literal blocks, so a changed line of a description is one line
    of diff."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

HEADER = (
    "# ToolHub catalog of tenant {slug}. Preview a change with\n"
    "#   manage.py catalog_apply FILE --plan\n"
    "# and apply it without --plan. Published versions never change: edit a definition and\n"
    "# apply makes it a new version.\n"
)


PLATFORM_HEADER = (
    "# ToolHub platform catalog: shared tools, shared toolsets, platform upstreams (credential\n"
    "# names, never values), tenants and their agents (never keys), grants of shared tools.\n"
    "# Apply it before the tenants' files:\n"
    "#   manage.py catalog_apply FILE --plan\n"
)


def document_yaml(document: Mapping[str, Any]) -> str:
    body = yaml.dump(
        dict(document), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=float("inf"),
        default_flow_style=False,
    )
    if document.get("kind") == PLATFORM_KIND:
        return PLATFORM_HEADER + body
    return HEADER.format(slug=document["tenant"]) + body


# --- YAML → checked document ---------------------------------------------------------------


def _model_field(model: type[models.Model], name: str) -> models.Field:
    """A field of the model's own columns (not the reverse side of a relation)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise TypeError(f"{model.__name__}.{name} is not a field of its own")
    return field


def _field_value(
    model: type[models.Model], name: str, value: Any, path: str, problems: list[Problem], *,
    validate: bool = False,
) -> Any:
    """`value` as the model field stores it (a YAML 10 for a float field is 10.0); with
    `validate`, also within the field's bounds (a count of -1 is refused here, at its path)."""
    if name in _JSON_FIELDS or value is None:
        return value
    field = _model_field(model, name)
    try:
        value = field.to_python(value)
        if validate:
            field.run_validators(value)
        return value
    except ValidationError as error:
        problems.extend(problems_of(path, error))
        return value


def _check_version(raw: Any, path: str, problems: list[Problem]) -> dict[str, Any] | None:
    if not expect(raw, dict, path, "a mapping (a version)", problems):
        return None
    unknown_keys(raw, ("number", "status", *VERSION_FIELDS), path, problems)
    number, status = raw.get("number"), raw.get("status", VersionStatus.DRAFT)
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        problems.append(Problem(f"{path}.number", f"expected a version number (1, 2, …), found {number!r}."))
        return None
    if status not in VersionStatus.values:
        problems.append(Problem(
            f"{path}.status", f"unknown status {status!r}; one of {', '.join(VersionStatus.values)}."
        ))
        return None
    entry: dict[str, Any] = {"number": number, "status": status}
    for name in VERSION_FIELDS:
        model_field = _model_field(ToolVersion, name)
        value = raw[name] if name in raw else model_field.get_default()
        entry[name] = _sorted(_field_value(ToolVersion, name, value, f"{path}.{name}", problems))
    return entry


def _check_tool(raw: Any, path: str, problems: list[Problem]) -> dict[str, Any] | None:
    if not expect(raw, dict, path, "a mapping (a tool)", problems):
        return None
    unknown_keys(raw, ("summary", "replaced_by", "versions"), path, problems)
    summary, replaced_by = raw.get("summary") or "", raw.get("replaced_by")
    versions = raw.get("versions") or []
    ok = expect(summary, str, f"{path}.summary", "text", problems)
    ok &= replaced_by is None or expect(replaced_by, str, f"{path}.replaced_by", "a tool name", problems)
    ok &= expect(versions, list, f"{path}.versions", "a list of versions", problems)
    if not ok:
        return None
    checked = [_check_version(v, f"{path}.versions[{i}]", problems) for i, v in enumerate(versions)]
    numbers = [v["number"] for v in checked if v is not None]
    if numbers != sorted(set(numbers)):
        problems.append(Problem(f"{path}.versions", "list versions by number, each once, lowest first."))
    return {"summary": summary, "replaced_by": replaced_by, "versions": [v for v in checked if v]}


def check_list(raw: Any, path: str, keys: tuple[str, ...], problems: list[Problem]) -> list[dict[str, Any]]:
    if not expect(raw, list, path, "a list", problems):
        return []
    entries = []
    for i, entry in enumerate(raw):
        if expect(entry, dict, f"{path}[{i}]", "a mapping", problems):
            unknown_keys(entry, keys, f"{path}[{i}]", problems)
            entries.append({"_path": f"{path}[{i}]", **{k: entry.get(k) for k in keys}})
    return entries


def _check_reference(
    entry: dict[str, Any], name: str, kind: type, what: str, problems: list[Problem]
) -> bool:
    value = entry[name]
    return value is None or expect(value, kind, f"{entry['_path']}.{name}", what, problems)


def check_grant(entry: dict[str, Any], problems: list[Problem]) -> dict[str, Any] | None:
    ok = expect(entry["tool"], str, f"{entry['_path']}.tool", "a tool name", problems)
    ok &= _check_reference(entry, "agent", str, "an agent name, or null for every agent", problems)
    ok &= _check_reference(entry, "pinned_version", int, "a version number, or null for the latest", problems)
    return entry if ok else None


def _check_policy(entry: dict[str, Any], problems: list[Problem]) -> dict[str, Any] | None:
    path = entry["_path"]
    if not _check_reference(entry, "tool", str, "a tool name, or null for every tool", problems):
        return None
    checked = {"_path": path, "tool": entry["tool"]}
    for name in POLICY_FIELDS:
        value = entry[name] if entry[name] is not None else policy_default(name)
        if name != "rule_overrides":
            value = _field_value(TenantPolicy, name, value, f"{path}.{name}", problems, validate=True)
        checked[name] = _sorted(value)
    return checked


def yaml_mapping(text: str) -> Any:
    """The YAML in `text`, parsed. Raises DocumentError when it is not YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DocumentError([Problem("", f"not valid YAML: {error}")]) from error


def check_tools(raw: Any, problems: list[Problem]) -> dict[str, Any] | None:
    """The `tools` section checked, or None when it is not a mapping (a problem says so)."""
    if not expect(raw, dict, "tools", "a mapping of tool name → tool", problems):
        return None
    tools = {str(n): _check_tool(t, f"tools.{n}", problems) for n, t in raw.items()}
    return {n: t for n, t in sorted(tools.items()) if t is not None}


def check_catalog_sections(raw: Mapping[str, Any], document: dict[str, Any], problems: list[Problem]) -> None:
    """The format, and the sections every catalog document may hold (tools, toolsets,
    upstreams), checked into `document`."""
    if raw.get("format", FORMAT) != FORMAT:
        problems.append(Problem("format", f"this ToolHub reads format {FORMAT}, not {raw['format']!r}."))
    if "tools" in raw and (tools := check_tools(raw["tools"], problems)) is not None:
        document["tools"] = tools
    if "toolsets" in raw and (toolsets := check_toolsets(raw["toolsets"], problems)) is not None:
        document["toolsets"] = toolsets
    if "upstreams" in raw and (upstreams := check_upstreams(raw["upstreams"], problems)) is not None:
        document["upstreams"] = upstreams


def document_from_yaml(text: str) -> dict[str, Any]:
    """The checked, normalized document of a tenant in `text` (defaults filled in, values as
    the models store them). Raises DocumentError listing every problem with its path."""
    return tenant_document_checked(yaml_mapping(text))


def tenant_document_checked(raw: Any) -> dict[str, Any]:
    """A tenant's parsed document, checked and normalized. Raises DocumentError."""
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        raise DocumentError([Problem("", f"expected a mapping with tenant, {', '.join(SECTIONS)}.")])
    unknown_keys(raw, ("format", "tenant", *SECTIONS), "", problems)
    document: dict[str, Any] = {"format": FORMAT, "tenant": raw.get("tenant")}
    check_catalog_sections(raw, document, problems)
    if "grants" in raw:
        grants = check_list(raw["grants"], "grants", ("tool", "agent", "pinned_version"), problems)
        document["grants"] = [g for g in grants if check_grant(g, problems)]
    if "policies" in raw:
        policies = check_list(raw["policies"], "policies", ("tool", *POLICY_FIELDS), problems)
        document["policies"] = [p for p in (_check_policy(e, problems) for e in policies) if p]
    if problems:
        raise DocumentError(problems)
    return document
