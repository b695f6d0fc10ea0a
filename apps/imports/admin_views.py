"""The admin's "Import OpenAPI" page: upload a document or give its URL, see per operation
what the import did and what lint finds in each draft, and open the drafts to review them.

Tenant-scoped staff import into their tenant; a superuser picks the tenant. The page needs
the permissions to add tools and versions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.validators import RegexValidator
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from apps.common.admin import AdminScope, admin_actor, admin_scope
from apps.tenancy.models import Tenant

from .errors import ImportRefused
from .fetch import MAX_DOCUMENT_BYTES, document_fetch
from .services import ImportReport, openapi_import

PERMISSIONS = ("catalog.add_tool", "catalog.add_toolversion")


class OpenAPIImportForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("slug"), required=False)
    document = forms.FileField(required=False, help_text="An OpenAPI 3.0 or 3.1 document, JSON or YAML.")
    url = forms.URLField(
        required=False, assume_scheme="https", label="or its URL",
        help_text="Fetched through the egress policy (hosts it refuses are not fetched).",
    )
    upstream = forms.CharField(
        max_length=64, validators=[RegexValidator(r"^[-A-Za-z0-9_]+$", "Letters, digits, '-' and '_'.")],
        help_text="The upstream the tools call; created from the base URL when the tenant has none of "
        "that name.",
    )
    base_url = forms.URLField(
        required=False, assume_scheme="https", help_text="Default: the document's first server."
    )
    credential = forms.CharField(required=False, max_length=64,
                                 help_text="The credential of the upstream, if it is created.")
    operations = forms.CharField(
        required=False, help_text="Only these operations (operationIds, comma-separated); empty: all."
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
        if upload is not None and upload.size > MAX_DOCUMENT_BYTES:
            raise forms.ValidationError(f"The document is larger than {MAX_DOCUMENT_BYTES} bytes.")
        return cleaned


def openapi_import_view(request: HttpRequest) -> HttpResponse:
    scope = admin_scope(request)
    if scope.sees_nothing or not request.user.has_perms(PERMISSIONS):
        raise PermissionDenied
    form = OpenAPIImportForm(request.POST or None, request.FILES or None, scope=scope)
    report: ImportReport | None = None
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        # Tenant staff import into their own tenant (the form has no tenant field for them).
        tenant: Tenant = data.get("tenant") or Tenant.objects.get(pk=scope.tenant_id or 0)
        try:
            text = document_fetch(url=data["url"]) if data["url"] else data["document"].read()
            report = openapi_import(
                tenant=tenant, document_text=text, upstream=data["upstream"], actor=admin_actor(request),
                base_url=data["base_url"] or None, fetched_from=data["url"] or None,
                credential=data["credential"] or None,
                operation_ids=[o.strip() for o in data["operations"].split(",") if o.strip()] or None,
            )
        except ImportRefused as refused:
            error = f"Nothing was imported. {refused}"
    context = {
        **admin.site.each_context(request),
        "title": "Import OpenAPI",
        "form": form,
        "report": report,
        "error": error,
    }
    return TemplateResponse(request, "admin/imports/openapi_import.html", context)
