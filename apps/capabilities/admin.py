"""Capabilities agents asked for and could not get: counted, grouped, with a curator's status."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.common.admin import TenantScopedAdmin, json_display

from .models import CapabilityRequest


@admin.register(CapabilityRequest)
class CapabilityRequestAdmin(TenantScopedAdmin):
    """Rows are written by the gateway; curators only set the status and its explanation."""

    list_display = ("name", "tenant", "count", "status", "fulfilled_by", "first_seen", "last_seen")
    list_select_related = ("tenant", "fulfilled_by")
    list_filter = ("status", ("tenant", admin.RelatedOnlyFieldListFilter))
    search_fields = ("name", "decline_reason")
    ordering = ("-count", "name")
    fields = ("name", "tenant", "count", "first_seen", "last_seen", "status", "fulfilled_by",
              "decline_reason", "samples_json")
    readonly_fields = ("name", "tenant", "count", "first_seen", "last_seen", "samples_json")
    samples_json = json_display("samples", "latest calls")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
