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


# What a credential of kind env may fill, and what a launcher lists: a POSIX environment name.
env_name_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", "Use letters, digits and '_', not starting with a digit."
)


class UpstreamKind(models.TextChoices):
    HTTP = "http", "HTTP API"
    MCP = "mcp", "MCP server"


class CredentialKind(models.TextChoices):
    BEARER = "bearer", "Bearer token (Authorization: Bearer …)"
    BASIC = "basic", "Basic auth (value user:password)"
    HEADER = "header", "API key in a header (field: the header name)"
    QUERY = "query", "API key in a query parameter (field: the parameter name)"
    ENV = "env", "Environment variable of a stdio MCP server (field: the variable name)"


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
        if self.kind in (CredentialKind.HEADER, CredentialKind.QUERY, CredentialKind.ENV):
            validator = {
                CredentialKind.HEADER: header_name_validator, CredentialKind.ENV: env_name_validator
            }.get(CredentialKind(self.kind))
            if not self.field:
                errors["field"] = f"A {self.kind} credential needs the {self.kind} name it is sent as."
            elif validator is not None:
                try:
                    validator(self.field)
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


def _string_list_problem(value: object, what: str) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        return f"{what} must be a list of non-empty strings."
    if any("\x00" in item for item in value):
        return f"{what} must not contain NUL characters."
    return None


class McpLauncher(TimeStampedModel):
    """A command the platform lets tenants run as stdio MCP servers, and how it is confined.

    Only a superuser registers one: running a command is running code on ToolHub's machines.
    A tenant's upstream names a launcher (and, when it allows, extra arguments), never an
    executable. The bridge (`manage.py mcp_bridge`, apps/bridge) runs each process under
    bubblewrap with only these paths, this environment and these limits.
    """

    name = models.CharField(max_length=63, unique=True, validators=[name_validator])
    description = models.TextField(blank=True, help_text="What the server does, for curators.")
    command = models.JSONField(
        help_text="The executable (an absolute path), then its fixed arguments: e.g. "
        "/opt/mcp/bin/mcp-server-time, --local-timezone, UTC."
    )
    read_paths = models.JSONField(
        default=list, blank=True,
        help_text="Host paths the process may read (absolute). The executable, its interpreter and "
        "the libraries they load are always readable, never writable.",
    )
    write_paths = models.JSONField(
        default=list, blank=True,
        help_text="Host paths the process may write (absolute), besides its own scratch directory.",
    )
    env_names = models.JSONField(
        default=list, blank=True, verbose_name="environment names",
        help_text="The environment variables a tenant's credential (kind env) may fill. The process "
        "sees no other variable of ToolHub's.",
    )
    allow_args = models.BooleanField(
        default=False, verbose_name="tenants may append arguments",
        help_text="Whether an upstream may add arguments after the fixed ones.",
    )
    network = models.BooleanField(
        default=False,
        help_text="Whether the process shares the machine's network. Off: it has none (only its own "
        "loopback). On, its connections are not filtered host by host: grant it only to servers that "
        "need the network, and only where the egress policy allows public egress.",
    )
    memory_mb = models.PositiveIntegerField(
        default=1024, validators=[MinValueValidator(64), MaxValueValidator(65536)],
        verbose_name="memory (MiB)", help_text="Address space a process may map.",
    )
    cpu_s = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(1), MaxValueValidator(86400)],
        verbose_name="CPU (s)", help_text="CPU seconds a process may use; past them it is stopped and "
        "started again on the next call.",
    )
    max_processes = models.PositiveIntegerField(
        default=32, validators=[MinValueValidator(1), MaxValueValidator(4096)],
        help_text="Processes and threads a server may run at once.",
    )
    max_open_files = models.PositiveIntegerField(
        default=256, validators=[MinValueValidator(16), MaxValueValidator(65536)],
    )
    idle_stop_s = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(5), MaxValueValidator(86400)],
        verbose_name="stop when idle for (s)",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP launcher"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if problem := _string_list_problem(self.command, "The command"):
            errors["command"] = problem
        elif not self.command:
            errors["command"] = "Name the executable."
        elif not self.command[0].startswith("/"):
            errors["command"] = "The executable must be an absolute path: nothing is looked up on a PATH."
        for field_name in ("read_paths", "write_paths"):
            paths = getattr(self, field_name)
            if problem := _string_list_problem(paths, "The paths"):
                errors[field_name] = problem
            elif relative := [path for path in paths if not path.startswith("/") or "/../" in f"{path}/"]:
                errors[field_name] = f"Use absolute paths without '..': {', '.join(relative)}."
        if problem := _string_list_problem(self.env_names, "The names"):
            errors["env_names"] = problem
        else:
            for env_name in self.env_names:
                try:
                    env_name_validator(env_name)
                except ValidationError as error:
                    errors["env_names"] = f"{env_name}: {error.messages[0]}"
        if errors:
            raise ValidationError(errors)


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
        max_length=500, verbose_name="base URL", blank=True,
        help_text="http(s) URL that versions' paths are appended to, e.g. https://api.example.com/v2. "
        "Empty for an MCP server run by a launcher.",
    )
    launcher = models.ForeignKey(
        McpLauncher, on_delete=models.PROTECT, null=True, blank=True, related_name="upstreams",
        help_text="MCP servers that speak stdio: the platform's launcher that runs the server, "
        "instead of a URL.",
    )
    launcher_args = models.JSONField(
        default=list, blank=True, verbose_name="launcher arguments",
        help_text="Arguments appended to the launcher's command, when the launcher allows it.",
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
        errors.update(self._where_problems())
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

    @property
    def where(self) -> str:
        """Where the upstream is, as people name it: its URL, or the launcher and arguments that
        run it."""
        if self.launcher is None:
            return self.base_url
        return " ".join(["launcher", self.launcher.name, *self.launcher_args])

    def _where_problems(self) -> dict[str, str]:
        """Where the upstream is: a URL, or (MCP servers only) a launcher and its arguments."""
        if self.launcher_id is None:
            if self.launcher_args:
                return {"launcher_args": "Arguments go to a launcher; name one, or leave them out."}
            if not self.base_url:
                return {"base_url": "Give the upstream's URL (or, for an MCP server, a launcher)."}
            if not self.base_url.lower().startswith(("http://", "https://")):
                return {"base_url": "Use an http:// or https:// URL."}
            if self.credential is not None and self.credential.kind == CredentialKind.ENV:
                return {"credential": "A credential of kind env fills a stdio server's environment; "
                        "an upstream with a URL needs one sent over HTTP."}
            return {}
        launcher = self.launcher
        assert launcher is not None
        if self.kind != UpstreamKind.MCP:
            return {"launcher": "Only an MCP server is run by a launcher; an HTTP API has a URL."}
        if self.base_url:
            return {"base_url": "An upstream run by a launcher has no URL: leave it empty."}
        if problem := _string_list_problem(self.launcher_args, "The arguments"):
            return {"launcher_args": problem}
        if self.launcher_args and not launcher.allow_args:
            return {"launcher_args": f"Launcher {launcher.name} takes no arguments from an upstream."}
        credential = self.credential
        if credential is not None and credential.kind != CredentialKind.ENV:
            return {"credential": "A stdio server takes its credential in its environment: use a "
                    "credential of kind env."}
        if credential is not None and credential.field not in launcher.env_names:
            return {"credential": f"Launcher {launcher.name} lets credentials fill "
                    f"{', '.join(launcher.env_names) or 'no environment variable'}, not {credential.field}."}
        return {}
