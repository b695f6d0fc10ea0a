"""Reads of upstreams and credentials. `upstream_for_call` is the executors' entry: the one
place a credential's value is decrypted, into memory only."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field

from django.apps import apps
from django.db import models
from django.db.models import Q, QuerySet

from .bridge import bridge_headers, bridge_url, launch_spec
from .crypto import InvalidToken, decrypt
from .errors import CredentialUnreadable, SubjectCredentialMissing, UpstreamNotFound
from .memo import KnownUpstream, UpstreamMemo, upstream_memo
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
    # Where it is, as people name it (Upstream.where): reports say this, never the bridge's URL.
    where: str = ""


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
    visible = upstreams_visible(tenant_id=tenant_id).select_related("credential", "launcher")
    return visible.filter(name=name).first()


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


def _known_upstream(*, tenant_id: int | None, name: str) -> KnownUpstream:
    """The upstream as the memo keeps it: the row, and its shared credential's value decrypted."""
    upstream = upstream_get(tenant_id=tenant_id, name=name)
    if upstream is None:
        raise UpstreamNotFound(name)
    credential = upstream.credential
    if credential is None or credential.per_subject:
        return KnownUpstream(upstream=upstream, value=None)
    return KnownUpstream(upstream=upstream, value=_decrypted(upstream, credential, credential.ciphertext))


def _subject_value(
    memo: UpstreamMemo, upstream: Upstream, credential: Credential, subject: str, agent_id: int | None
) -> str:
    """The token the end user `subject` registered through the agent `agent_id`."""
    if agent_id is None:
        raise SubjectCredentialMissing(credential.name)
    key = (credential.pk, agent_id, subject)
    value = memo.subject_values.get(key)
    if value is None:
        own = SubjectCredential.objects.filter(
            credential=credential, agent_id=agent_id, subject=subject
        ).first()
        if own is None:
            raise SubjectCredentialMissing(credential.name)
        value = _decrypted(upstream, credential, own.ciphertext)
        memo.remember(memo.subject_values, key, value)
    return value


def _decrypted(upstream: Upstream, credential: Credential, ciphertext: str) -> str:
    try:
        return decrypt(ciphertext)
    except InvalidToken:
        logger.error(
            "credential %s of upstream %s cannot be decrypted with TOOLHUB_ENCRYPTION_KEYS",
            credential.name, upstream.name,
        )
        raise CredentialUnreadable(upstream.name, credential.name) from None


def upstream_for_call(
    *, tenant_id: int | None, name: str, subject: str, agent_id: int | None = None,
    calling_tenant_id: int | None = None, generation: int | None = None,
) -> ResolvedUpstream:
    """The upstream `name` as the tenant's tool calls it, for the session's `subject` ("" for
    none) through the agent `agent_id` (None: no agent, as for a drift check), with its
    credential's value decrypted into the auth headers or query. `tenant_id` owns the tool
    (None: the platform); `calling_tenant_id` is the tenant whose call it is when another
    (a platform tool's caller), for a stdio server run for that tenant alone.

    Served from this process's memo (memo.py) unless an upstream, credential, token or
    launcher changed since it was filled: since `generation`, the upstreams' generation as the
    caller read it with other keys (None: read now).

    Raises UpstreamNotFound (none visible to the tenant; CredentialUnreadable, a subclass,
    when no configured key decrypts its credential) or SubjectCredentialMissing (a per-user
    credential and this subject registered no token through this agent).
    """
    memo = upstream_memo(generation=generation)
    known = memo.upstreams.get((tenant_id, name))
    if known is None:
        known = _known_upstream(tenant_id=tenant_id, name=name)
        memo.remember(memo.upstreams, (tenant_id, name), known)
    upstream, credential, value = known.upstream, known.upstream.credential, known.value
    if credential is not None and credential.per_subject:
        value = _subject_value(memo, upstream, credential, subject, agent_id)
    if upstream.launcher is not None:
        caller = tenant_id if calling_tenant_id is None else calling_tenant_id
        return _bridged(upstream, tenant_id=caller, subject=subject, value=value)
    headers, query = ({}, {}) if credential is None or value is None else _auth(credential, value)
    return ResolvedUpstream(
        name=upstream.name, kind=upstream.kind, base_url=upstream.base_url, timeout_s=upstream.timeout_s,
        status_tool=upstream.status_tool, auth_headers=headers, auth_query=query, where=upstream.where,
    )


def _bridged(
    upstream: Upstream, *, tenant_id: int | None, subject: str, value: str | None
) -> ResolvedUpstream:
    """A stdio MCP server as the executors reach it: the bridge's address of the process that
    serves this tenant (and, with a per-user credential, this end user), told what to run."""
    credential = upstream.credential
    spec = launch_spec(
        launcher=upstream.launcher, args=list(upstream.launcher_args),
        env_name=credential.field if credential is not None else None,
    )
    per_user = credential is not None and credential.per_subject
    return ResolvedUpstream(
        name=upstream.name, kind=upstream.kind, timeout_s=upstream.timeout_s,
        status_tool=upstream.status_tool,
        base_url=bridge_url(
            upstream_id=upstream.pk, tenant_id=tenant_id, subject=subject if per_user else ""
        ),
        auth_headers=bridge_headers(spec=spec, credential_value=value),
        where=upstream.where,
    )


def tenant_by_slug(*, slug: str) -> models.Model | None:
    """The tenant of that slug, for the commands. By model reference: tenancy sits beside
    this app, not below it."""
    return apps.get_model("tenancy", "Tenant").objects.filter(slug=slug).first()
