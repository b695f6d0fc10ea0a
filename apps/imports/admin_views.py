"""The admin's import pages, which make drafts through the same services as the commands:

- "Import OpenAPI": upload a document or give its URL; a Celery task imports it (runs.py)
  while its page shows the progress, then the report, the operations the document no
  longer has and a button to deprecate their tools;
- "Import tools" of an MCP server upstream (a button on the upstream's page): its tools as
  it lists them now, the side effect each draft would get; the curator ticks tools.

Both show per operation or tool what the import did, the draft's side effect and what lint
finds in it, and link to the drafts to review. Tenant-scoped staff import into their tenant
(and only from their own upstreams); a superuser picks the tenant where it is not the
upstream's. The pages need the permissions to add tools and versions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.validators import RegexValidator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.common.admin import AdminScope, admin_actor, admin_scope, restrict_to_scope
from apps.tenancy.models import Tenant
from apps.upstreams.models import Upstream, UpstreamKind

from .errors import ImportRefused
from .import_tail import ImportReport
from .limits import ImportLimits, too_large
from .mcp_services import mcp_import
from .models import OpenAPIImportRun, RunStatus
from .removed import removed_operations_deprecate
from .runs import openapi_import_run_start, report_of, run_progress, run_stopped
from .selectors import mcp_tool_definitions, mcp_tools_offered
from .tasks import openapi_import_task

PERMISSIONS = ("catalog.add_tool", "catalog.add_toolversion")


# The admin's own widths for text and URL inputs (forms.css).
TEXT_INPUT = forms.TextInput(attrs={"class": "vTextField"})
URL_INPUT = forms.URLInput(attrs={"class": "vURLField"})


class OpenAPIImportForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("slug"), required=False)
    document = forms.FileField(required=False, help_text="An OpenAPI 3.0 or 3.1 document, JSON or YAML.")
    url = forms.URLField(
        required=False, assume_scheme="https", label="or its URL", widget=URL_INPUT,
        help_text="Fetched through the egress policy (hosts it refuses are not fetched).",
    )
    upstream = forms.CharField(
        max_length=64, widget=TEXT_INPUT,
        validators=[RegexValidator(r"^[-A-Za-z0-9_]+$", "Letters, digits, '-' and '_'.")],
        help_text="The upstream the tools call; created from the base URL when the tenant has none of "
        "that name.",
    )
    base_url = forms.URLField(
        required=False, assume_scheme="https", widget=URL_INPUT,
        help_text="Default: the document's first server."
    )
    credential = forms.CharField(required=False, max_length=64, widget=TEXT_INPUT,
                                 help_text="The credential of the upstream, if it is created.")
    operations = forms.CharField(
        required=False, widget=TEXT_INPUT,
        help_text="Only these operations (operationIds, comma-separated); empty: all."
    )

    def __init__(self, *args: Any, scope: AdminScope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if scope.is_tenant:
            del self.fields["tenant"]
        else:
            self.fields["tenant"].required = True

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if bool(cleaned.get("document")) == bool(cleaned.get("url")):
            raise forms.ValidationError("Upload a document or give its URL (one of the two).")
        upload = cleaned.get("document")
        limit = ImportLimits.from_settings().max_document_bytes
        if upload is not None and upload.size > limit:
            raise forms.ValidationError(too_large("The document", upload.size, limit))
        return cleaned


def _importer_scope(request: HttpRequest) -> AdminScope:
    scope = admin_scope(request)
    if scope.sees_nothing or not request.user.has_perms(PERMISSIONS):
        raise PermissionDenied
    return scope


def openapi_import_view(request: HttpRequest) -> HttpResponse:
    """The form; a valid one starts the import's task and goes to its page."""
    scope = _importer_scope(request)
    form = OpenAPIImportForm(request.POST or None, request.FILES or None, scope=scope)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        # Tenant staff import into their own tenant (the form has no tenant field for them).
        tenant: Tenant = data.get("tenant") or Tenant.objects.get(pk=scope.tenant_id or 0)
        run = openapi_import_run_start(
            tenant=tenant, actor=admin_actor(request),
            document=None if data["url"] else data["document"].read(),
            options={
                "upstream": data["upstream"], "base_url": data["base_url"] or None,
                "fetched_from": data["url"] or None, "credential": data["credential"] or None,
                "operation_ids": [o.strip() for o in data["operations"].split(",") if o.strip()] or None,
            },
            enqueue=openapi_import_task.delay,
        )
        return HttpResponseRedirect(reverse("admin:imports_openapi_run", args=[run.pk]))
    context = {**admin.site.each_context(request), "title": "Import OpenAPI", "form": form}
    return TemplateResponse(request, "admin/imports/openapi_import.html", context)


# Seconds between two loads of a run's page while the import runs.
REFRESH_S = 2


def openapi_import_run_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """One import's page: its progress while it runs (the page reloads itself), then what it
    did with every operation, or why nothing was imported. POST deprecates the tools of the
    operations the document no longer has."""
    scope = _importer_scope(request)
    run = restrict_to_scope(OpenAPIImportRun.objects.select_related("tenant").defer("document"), scope,
                            tenant_path="tenant").filter(pk=run_id).first()
    if run is None:
        raise Http404("No OpenAPI import with this id.")
    report = report_of(run)
    deprecated = []
    if request.method == "POST" and report is not None and report.removed:
        deprecated = removed_operations_deprecate(
            tenant=run.tenant, upstream=report.upstream, removed=[r.key for r in report.removed],
            actor=admin_actor(request),
        )
    stopped = run_stopped(run)
    error = run.error or ("The worker running this import stopped (it was killed or lost its broker); "
                          "nothing was imported. Start the import again." if stopped else "")
    running = run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and not stopped
    context = {
        **admin.site.each_context(request),
        "title": "Import OpenAPI",
        "run": run,
        "running": running,
        "refresh_s": REFRESH_S,
        "progress": run_progress(run) if running else None,
        "report": report,
        "deprecated": deprecated,
        "error": error,
    }
    # A refused import is the request's fault (the document, or what was asked): a 4xx.
    return TemplateResponse(request, "admin/imports/openapi_import_run.html", context,
                            status=400 if error else 200)


class McpToolsImportForm(forms.Form):
    tenant = forms.ModelChoiceField(
        queryset=Tenant.objects.order_by("slug"), required=False,
        help_text="The tenant whose catalog gets the drafts (a platform upstream serves every tenant).",
    )

    def __init__(self, *args: Any, tool_names: list[str], asks_tenant: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tools"] = forms.MultipleChoiceField(
            choices=[(name, name) for name in tool_names], widget=forms.CheckboxSelectMultiple,
            error_messages={"required": "Tick at least one tool."},
        )
        if asks_tenant:
            self.fields["tenant"].required = True
        else:
            del self.fields["tenant"]


def mcp_tools_import_view(request: HttpRequest, upstream_id: int) -> HttpResponse:
    """The "Import tools" page of one MCP server upstream: list, tick, import as drafts."""
    scope = _importer_scope(request)
    # Tenant staff import from their tenant's upstreams only; a platform upstream's tools are
    # imported by superusers, into the tenant they pick.
    upstream = restrict_to_scope(
        Upstream.objects.select_related("tenant").filter(kind=UpstreamKind.MCP), scope, tenant_path="tenant"
    ).filter(pk=upstream_id).first()
    if upstream is None:
        raise Http404("No MCP server upstream with this id.")
    error = ""
    try:
        _, definitions = mcp_tool_definitions(tenant=upstream.tenant, upstream=upstream.name)
    except ImportRefused as refused:
        definitions = []
        error = f"{refused} Check the upstream's URL and credential, and that the server is running."
        if request.method == "POST":
            error = f"Nothing was imported. {error}"
    form = McpToolsImportForm(
        request.POST if request.method == "POST" else None, tool_names=[str(d["name"]) for d in definitions],
        asks_tenant=upstream.tenant is None,
    )
    report: ImportReport | None = None
    if request.method == "POST" and definitions and form.is_valid():
        try:
            report = mcp_import(
                tenant=upstream.tenant or form.cleaned_data["tenant"], upstream=upstream.name,
                actor=admin_actor(request), tool_names=form.cleaned_data["tools"],
            )
        except ImportRefused as refused:
            error = f"Nothing was imported. {refused}"
    context = {
        **admin.site.each_context(request),
        "title": f"Import tools of {upstream.name}",
        "upstream": upstream,
        "offered": mcp_tools_offered(tenant=upstream.tenant, upstream=upstream.name, definitions=definitions),
        "form": form,
        "report": report,
        "error": error,
    }
    # Listing alone never is; an import refused is the request's fault: a 4xx.
    status = 400 if error and request.method == "POST" else 200
    return TemplateResponse(request, "admin/imports/mcp_tools_import.html", context, status=status)
