"""Upstreams (the external systems tools call) and the credentials they authenticate with.

Both belong to a tenant, or to the platform when the tenant is empty (made by a superuser).
A tenant's tools may use the tenant's upstreams and the platform's; an upstream uses only a
credential of its own owner, so nobody can point someone else's secret at a host they chose.
Credential values are stored only as MultiFernet tokens (crypto.py) and shown to nobody.
"""

from __future__ import annotations

import string

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from apps.common.models import OwnerKind, TimeStampedModel, owner_name_clash, owner_name_constraints

name_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,62}$", "Use lowercase letters, digits, '-' and '_', at most 63."
)
# An HTTP header name (RFC 9110 token).
header_name_validator = RegexValidator(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "Not a valid HTTP header name.")
# Values go into headers and query strings: printable ASCII only, no CR/LF to inject with.
_VALUE_CHARACTERS = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")
# An end user's id as session tokens carry it (POST /api/v1/sessions takes at most this).
SUBJECT_MAX_CHARS = 200
# Shorter values show no last characters: four of eight would give half the secret away.
LAST4_MIN_LENGTH = 12


# Upstreams and credentials without a tenant are the platform's, usable by every tenant.
PLATFORM = OwnerKind(label="platform", adjective="platform")


def owned_by(tenant_id: int | None) -> Q:
    """The rows of one owner: a tenant's, or the platform's (no tenant)."""
    return Q(tenant__isnull=True) if tenant_id is None else Q(tenant_id=tenant_id)


def last4(value: str) -> str:
    """The last four characters shown for a value, or "" when it is too short to show any."""
    return value[-4:] if len(value) >= LAST4_MIN_LENGTH else ""


def value_problem(value: str, *, kind: str) -> str | None:
    """Why a value of a credential of `kind` cannot be stored, or None. Never quotes the value."""
    if not value:
        return "The value is empty."
    if not set(value) <= _VALUE_CHARACTERS:
        return "The value must be printable ASCII, without line breaks, tabs or control characters."
    if kind == CredentialKind.BASIC and ":" not in value:
        return "Basic auth takes user:password."
    return None


class UpstreamKind(models.TextChoices):
    HTTP = "http", "HTTP API"
    MCP = "mcp", "MCP server"


class CredentialKind(models.TextChoices):
    BEARER = "bearer", "Bearer token (Authorization: Bearer …)"
    BASIC = "basic", "Basic auth (value user:password)"
    HEADER = "header", "API key in a header (field: the header name)"
    QUERY = "query", "API key in a query parameter (field: the parameter name)"


class Credential(models.Model):
    """A secret an upstream authenticates with, or, per subject, each end user's own token."""

    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text="Owner. Empty: the platform's, for the platform's upstreams only.",
    )
    name = models.CharField(max_length=63, validators=[name_validator])
    kind = models.CharField(max_length=10, choices=CredentialKind.choices)
    field = models.CharField(
        max_length=100, blank=True,
        help_text="The header name (kind header) or query parameter name (kind query); empty otherwise.",
    )
    per_subject = models.BooleanField(
        default=False, verbose_name="per end user",
        help_text="Each end user's own token, registered by the agent's backend with "
        "PUT /api/v1/credentials/{name}/subjects/{subject}; the credential holds no value itself.",
    )
    ciphertext = models.TextField(blank=True, editable=False)
    last4 = models.CharField(max_length=4, blank=True, editable=False, verbose_name="last four")
    changed_by = models.CharField(max_length=200, blank=True, editable=False)
    changed_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = owner_name_constraints("credential", PLATFORM)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if clash := owner_name_clash(self, name=self.name, tenant_id=self.tenant_id, owner=PLATFORM):
            errors["name"] = clash
        if self.kind in (CredentialKind.HEADER, CredentialKind.QUERY):
            if not self.field:
                errors["field"] = f"A {self.kind} credential needs the {self.kind} name it is sent as."
            elif self.kind == CredentialKind.HEADER:
                try:
                    header_name_validator(self.field)
                except ValidationError as error:
                    errors["field"] = error.messages[0]
        elif self.field:
            errors["field"] = f"A {self.kind} credential has no field; leave it empty."
        if self.per_subject and self.tenant_id is None:
            errors["per_subject"] = (
                "Only a tenant's credential can be per end user: that tenant's agents register "
                "their users' tokens."
            )
        if errors:
            raise ValidationError(errors)


class SubjectCredential(models.Model):
    """One end user's own value of a per-subject credential, as one agent registered it in
    that user's session: only that agent's calls in that user's sessions send it, and only
    that agent replaces or removes it."""

    credential = models.ForeignKey(Credential, on_delete=models.CASCADE, related_name="subjects")
    agent = models.ForeignKey(
        "tenancy.Agent", on_delete=models.CASCADE, related_name="+",
        help_text="The agent that registered it; the only one whose calls send it.",
    )
    subject = models.CharField(max_length=SUBJECT_MAX_CHARS)
    ciphertext = models.TextField(editable=False)
    last4 = models.CharField(max_length=4, blank=True, editable=False, verbose_name="last four")
    changed_at = models.DateTimeField(editable=False)

    class Meta:
        ordering = ["subject", "agent__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["credential", "agent", "subject"], name="subject_credential_unique_per_agent"
            )
        ]

    def __str__(self) -> str:
        return f"{self.credential.name} of {self.subject}"


class Upstream(TimeStampedModel):
    """An external system tools call: where it is, how long to wait, how to authenticate."""

    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        help_text="Owner. Empty: the platform's, usable by every tenant's tools, edited by superusers.",
    )
    name = models.CharField(
        max_length=63, validators=[name_validator],
        help_text="What tool versions name in executor_config.upstream. Unique within its owner, "
        "and never the name of a platform upstream (or, for a platform upstream, of any tenant's).",
    )
    kind = models.CharField(max_length=10, choices=UpstreamKind.choices, default=UpstreamKind.HTTP)
    base_url = models.URLField(
        max_length=500, verbose_name="base URL",
        help_text="http(s) URL that versions' paths are appended to, e.g. https://api.example.com/v2.",
    )
    timeout_s = models.FloatField(
        default=10.0, validators=[MinValueValidator(0.1), MaxValueValidator(600)],
        verbose_name="default timeout (s)",
    )
    credential = models.ForeignKey(
        Credential, on_delete=models.PROTECT, null=True, blank=True, related_name="upstreams",
        help_text="Sent with every request; a credential of the same owner.",
    )
    status_tool = models.CharField(
        max_length=200, blank=True,
        help_text="MCP servers only: one of the server's own readonly tools that reports a write's "
        "outcome, called with {\"idempotency_key\": …}. Without one, a write whose outcome is "
        "unknown waits in the triage queue.",
    )
    sync_interval_minutes = models.PositiveIntegerField(
        default=15, validators=[MinValueValidator(1), MaxValueValidator(7 * 24 * 60)],
        verbose_name="drift check every (minutes)",
        help_text="MCP servers only: how often the server's tools/list is compared with the "
        "definitions the published versions were made from.",
    )
    suspend_drifted_tools = models.BooleanField(
        default=False,
        help_text="MCP servers only: refuse calls to a tool whose upstream definition drifted "
        "(agents read the error \"unavailable\") until a curator reviews the finding. Off: the pinned "
        "version keeps serving.",
    )
    last_synced_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = owner_name_constraints("upstream", PLATFORM)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if clash := owner_name_clash(self, name=self.name, tenant_id=self.tenant_id, owner=PLATFORM):
            errors["name"] = clash
        if self.base_url and not self.base_url.lower().startswith(("http://", "https://")):
            errors["base_url"] = "Use an http:// or https:// URL."
        credential = self.credential
        if credential is not None and credential.tenant_id != self.tenant_id:
            errors["credential"] = (
                "Use a credential of the upstream's own owner: a credential is sent only to "
                "upstreams its owner configured."
            )
        if self.kind != UpstreamKind.MCP and self.status_tool:
            errors["status_tool"] = (
                "Only an MCP server names a status tool; an HTTP API's versions set status_path."
            )
        if errors:
            raise ValidationError(errors)
