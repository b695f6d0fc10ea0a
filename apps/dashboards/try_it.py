"""The try-it console's page, on the version's admin URL (/admin/catalog/toolversion/<id>/try/,
routed by the admin site): a dry run (or a real readonly call) as one of the tenant's agents."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from apps.catalog.models import SideEffect, ToolVersion
from apps.common.admin import (
    admin_actor,
    admin_scope,
    model_choice_field,
    restrict_to_scope,
    validation_message,
)
from apps.common.compat.django_admin import object_not_found
from apps.tenancy.models import Agent

from .console import sample_arguments, version_try


class TryItForm(forms.Form):
    agent = forms.ModelChoiceField(queryset=Agent.objects.none(), help_text="The call runs as this agent.")
    subject = forms.CharField(required=False, max_length=200, label="Session subject",
                              help_text="The end user the call is for (fills fields bound to the session).")
    arguments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "cols": 80, "class": "toolhub-code"}),
        help_text="What the model would send: a JSON object.",
    )
    real = forms.BooleanField(
        required=False, label="Real call (readonly tools only)",
        help_text="Otherwise a dry run: it stops after validation and says what would run.",
    )

    def __init__(self, *args: Any, agents: QuerySet[Agent], readonly: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice_field(self, "agent").queryset = agents
        if not readonly:
            self.fields["real"].disabled = True
            self.fields["real"].help_text = "Only readonly tools run for real from here; this one is not."


def version_try_view(request: HttpRequest, object_id: str) -> HttpResponse:
    """The try-it console: a dry run (or a real readonly call) as one of the tenant's agents."""
    version_admin = admin.site.get_model_admin(ToolVersion)
    version = version_admin.get_object(request, unquote(object_id))
    if version is None:
        return object_not_found(version_admin, request, object_id)
    if not request.user.has_perm("catalog.change_toolversion"):
        raise PermissionDenied
    agents = restrict_to_scope(Agent.objects.select_related("tenant").filter(active=True),
                               admin_scope(request), tenant_path="tenant")
    if version.tool.tenant_id:
        agents = agents.filter(tenant_id=version.tool.tenant_id)
    readonly = version.side_effect == SideEffect.READONLY
    initial = {"agent": agents.first(), "arguments": json.dumps(
        sample_arguments(version.parameters, version.context_bindings), indent=2)}
    form = TryItForm(request.POST or None, agents=agents, readonly=readonly, initial=initial)
    envelope = None
    if request.method == "POST" and form.is_valid():
        try:
            envelope = version_try(
                version=version, agent=form.cleaned_data["agent"], subject=form.cleaned_data["subject"],
                arguments=form.cleaned_data["arguments"], real=bool(form.cleaned_data["real"]),
                actor=admin_actor(request),
            )
        except ValidationError as error:
            form.add_error(None, validation_message(error))
    context = {
        **admin.site.each_context(request),
        "title": f"Try {version.tool.name} v{version.number}",
        "opts": version_admin.opts, "original": version, "form": form,
        "envelope": envelope,
        "envelope_json": json.dumps(envelope, indent=2, ensure_ascii=False) if envelope else "",
    }
    return TemplateResponse(request, "admin/catalog/toolversion/try_it.html", context)

