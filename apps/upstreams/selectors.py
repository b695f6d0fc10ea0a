"""Reads of upstreams and credentials. `upstream_for_call` is the executors' entry: the one
place a credential's value is decrypted, into memory only."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field

from django.apps import apps
from django.db import models
from django.db.models import Q, QuerySet

from .crypto import InvalidToken, decrypt
from .errors import CredentialUnreadable, SubjectCredentialMissing, UpstreamNotFound
from .models import Credential, CredentialKind, SubjectCredential, Upstream

logger = logging.getLogger("toolhub.upstreams")


@dataclass(frozen=True)
class ResolvedUpstream:
    """What an executor needs to call an upstream. The auth parts hold plaintext: they are
    left out of repr so that no log line or traceback shows them."""

    name: str
    kind: str
    base_url: str
    timeout_s: float
    # MCP servers: the server's tool that reports a write's outcome by idempotency key, or "".
    status_tool: str = ""
    auth_headers: dict[str, str] = field(default_factory=dict, repr=False)
    auth_query: dict[str, str] = field(default_factory=dict, repr=False)


def upstreams_visible(*, tenant_id: int | None) -> QuerySet[Upstream]:
    """The upstreams a tenant's tools may name: its own and the platform's (the platform's
    only, for no tenant)."""
    visible = Q(tenant__isnull=True)
    if tenant_id is not None:
        visible |= Q(tenant_id=tenant_id)
    return Upstream.objects.filter(visible)


def upstream_label(*, name: str, tenant_slug: str | None) -> str:
    """How reports and metrics name an upstream across tenants: a tenant's as slug/name (names
    repeat across tenants), the platform's by its name."""
    return f"{tenant_slug}/{name}" if tenant_slug else name


def upstream_get(*, tenant_id: int | None, name: str) -> Upstream | None:
    """The upstream of that name the tenant may use, or None."""
    return upstreams_visible(tenant_id=tenant_id).select_related("credential").filter(name=name).first()


def credential_get(*, tenant_id: int | None, name: str) -> Credential | None:
    """The credential of that name owned by the tenant (by the platform for None), or None."""
    owner = Q(tenant__isnull=True) if tenant_id is None else Q(tenant_id=tenant_id)
    return Credential.objects.filter(owner, name=name).first()


def _auth(credential: Credential, value: str) -> tuple[dict[str, str], dict[str, str]]:
    if credential.kind == CredentialKind.BEARER:
        return {"Authorization": f"Bearer {value}"}, {}
    if credential.kind == CredentialKind.BASIC:
        return {"Authorization": "Basic " + base64.b64encode(value.encode()).decode()}, {}
    if credential.kind == CredentialKind.HEADER:
        return {credential.field: value}, {}
    return {}, {credential.field: value}


def _value_for(upstream: Upstream, credential: Credential, subject: str, agent_id: int | None) -> str:
    ciphertext = credential.ciphertext
    if credential.per_subject:
        own = None if agent_id is None else SubjectCredential.objects.filter(
            credential=credential, agent_id=agent_id, subject=subject
        ).first()
        if own is None:
            raise SubjectCredentialMissing(credential.name)
        ciphertext = own.ciphertext
    try:
        return decrypt(ciphertext)
    except InvalidToken:
        logger.error(
            "credential %s of upstream %s cannot be decrypted with TOOLHUB_ENCRYPTION_KEYS",
            credential.name, upstream.name,
        )
        raise CredentialUnreadable(upstream.name, credential.name) from None


def upstream_for_call(
    *, tenant_id: int | None, name: str, subject: str, agent_id: int | None = None
) -> ResolvedUpstream:
    """The upstream `name` as the tenant's tool calls it, for the session's `subject` ("" for
    none) through the agent `agent_id` (None: no agent, as for a drift check), with its
    credential's value decrypted into the auth headers or query.

    Raises UpstreamNotFound (none visible to the tenant; CredentialUnreadable, a subclass,
    when no configured key decrypts its credential) or SubjectCredentialMissing (a per-user
    credential and this subject registered no token through this agent).
    """
    upstream = upstream_get(tenant_id=tenant_id, name=name)
    if upstream is None:
        raise UpstreamNotFound(name)
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    credential = upstream.credential
    if credential is not None:
        headers, query = _auth(credential, _value_for(upstream, credential, subject, agent_id))
    return ResolvedUpstream(
        name=upstream.name, kind=upstream.kind, base_url=upstream.base_url, timeout_s=upstream.timeout_s,
        status_tool=upstream.status_tool, auth_headers=headers, auth_query=query,
    )


def tenant_by_slug(*, slug: str) -> models.Model | None:
    """The tenant of that slug, for the commands. By model reference: tenancy sits beside
    this app, not below it."""
    return apps.get_model("tenancy", "Tenant").objects.filter(slug=slug).first()
