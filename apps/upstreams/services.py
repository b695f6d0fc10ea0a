"""Writes of upstreams and credentials, each with its audit event in one transaction; each
that changes what a call would send drops every process's memo of upstreams (memo.py) once it
commits.

A credential's value arrives here in plaintext and leaves only as a MultiFernet token and
its last four characters; audit events say what changed, never the value.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils import timezone

from apps.audit.services import audit_record, audited_save
from apps.common.catalog_generation import catalog_changed

from .crypto import encrypt, reencrypt
from .errors import SubjectsFull
from .memo import upstreams_changed
from .models import Credential, McpLauncher, SubjectCredential, Upstream, last4, owned_by, value_problem


def _lock_name(kind: str, name: str) -> None:
    """Serialize saves of one name until commit: whether a tenant's name clashes with a
    platform one spans rows no unique index covers."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"toolhub.{kind}:{name}"])


def _check_value(value: str, *, kind: str) -> None:
    if problem := value_problem(value, kind=kind):
        raise ValidationError({"value": problem})


def upstream_save(*, upstream: Upstream, actor: str) -> Upstream:
    """Create or update an upstream. Validates (ValidationError: a name its owner or the
    platform already has, a URL that is no http(s), another owner's credential), writes it
    and an audit event; invalidates the catalog caches (whether drifted tools are suspended
    changes what agents may call) and every process's memo of upstreams."""
    creating = upstream.pk is None
    with transaction.atomic():
        _lock_name("upstream", upstream.name)
        audited_save(
            upstream, tenant_id=upstream.tenant_id, actor=actor,
            action="upstream.create" if creating else "upstream.update",
            data={
                "name": upstream.name, "kind": upstream.kind, "base_url": upstream.base_url,
                "launcher": upstream.launcher.name if upstream.launcher is not None else None,
                "launcher_args": upstream.launcher_args,
                "credential": upstream.credential.name if upstream.credential is not None else None,
            },
        )
        catalog_changed()
        upstreams_changed()
    return upstream


def launcher_save(*, launcher: McpLauncher, actor: str) -> McpLauncher:
    """Create or update a launcher (a platform decision: callers check the actor is a
    superuser or the operator's shell). Validates, writes it and an audit event of what it
    runs and may touch."""
    creating = launcher.pk is None
    with transaction.atomic():
        audited_save(
            launcher, tenant_id=None, actor=actor,
            action="launcher.create" if creating else "launcher.update",
            data={
                "name": launcher.name, "command": launcher.command, "read_paths": launcher.read_paths,
                "write_paths": launcher.write_paths, "env_names": launcher.env_names,
                "allow_args": launcher.allow_args, "network": launcher.network,
            },
        )
        upstreams_changed()  # what a stdio upstream runs is its launcher's
    return launcher


def launcher_delete(*, launcher: McpLauncher, actor: str) -> None:
    """Delete a launcher no upstream names (ProtectedError otherwise)."""
    with transaction.atomic():
        audit_record(tenant_id=None, actor=actor, action="launcher.delete", target=launcher,
                     data={"name": launcher.name})
        launcher.delete()


def upstream_mark_synced(*, upstream_id: int, at: datetime) -> None:
    """Write the upstream's `last_synced_at` (when its drift check ran): bookkeeping of the
    check, no audit event and no change to the catalog."""
    Upstream.objects.filter(pk=upstream_id).update(last_synced_at=at)


def upstream_claim_sync(*, upstream_id: int, last: datetime | None, at: datetime) -> bool:
    """Claim the upstream's next drift check: write `last_synced_at = at` only if it is still
    `last` (a conditional UPDATE), so two beats or a slow worker never claim one check twice.
    True when this caller claimed it. No audit event."""
    unchanged = models.Q(last_synced_at__isnull=True) if last is None else models.Q(last_synced_at=last)
    return bool(Upstream.objects.filter(unchanged, pk=upstream_id).update(last_synced_at=at))


def upstream_delete(*, upstream: Upstream, actor: str) -> None:
    with transaction.atomic():
        audit_record(tenant_id=upstream.tenant_id, actor=actor, action="upstream.delete", target=upstream,
                     data={"name": upstream.name})
        upstream.delete()
        upstreams_changed()


def _locked_credential(tenant_id: int | None, name: str) -> tuple[Credential, bool]:
    """The owner's credential `name`, locked until commit, or a new one (True) not saved yet."""
    _lock_name("credential", name)
    credential = Credential.objects.select_for_update().filter(owned_by(tenant_id), name=name).first()
    if credential is None:
        return Credential(tenant_id=tenant_id, name=name), True
    return credential, False


def credential_set(
    *,
    tenant: models.Model | None,
    name: str,
    kind: str,
    field: str,
    value: str | None,
    per_subject: bool,
    actor: str,
) -> Credential:
    """Create or update the credential `name` of `tenant` (a Tenant, or None for the
    platform's). `value` None keeps the stored one; a per-subject credential holds none.

    Raises ValidationError: a name clash, a field the kind does not take or lacks, a value
    that is missing, not printable ASCII, or given to a per-subject credential. Writes the
    credential and an audit event (without the value).
    """
    tenant_id = getattr(tenant, "pk", None)
    with transaction.atomic():
        credential, creating = _locked_credential(tenant_id, name)
        credential.kind, credential.field, credential.per_subject = kind, field, per_subject
        if per_subject:
            if value:
                raise ValidationError({"value": (
                    "A per-end-user credential has no value of its own: each user's token is "
                    "registered with PUT /api/v1/credentials/{name}/subjects/{subject}."
                )})
            credential.ciphertext, credential.last4 = "", ""
        elif value is not None:
            _check_value(value, kind=kind)
            credential.ciphertext, credential.last4 = encrypt(value), last4(value)
        elif not credential.ciphertext:
            raise ValidationError({"value": "Enter the value: this credential has none stored yet."})
        credential.changed_by, credential.changed_at = actor, timezone.now()
        audited_save(
            credential, tenant_id=tenant_id, actor=actor,
            action="credential.create" if creating else "credential.update",
            data={"name": name, "kind": kind, "field": field, "per_subject": per_subject,
                  "value_changed": bool(value)},
        )
        upstreams_changed()
    return credential


def credential_declare(
    *, tenant: models.Model | None, name: str, kind: str, field: str, actor: str
) -> Credential:
    """The credential `name` of `tenant` (None: the platform's) with this kind and field,
    created with no value when missing (calls through it fail until someone sets one), its
    stored value kept otherwise. Raises ValidationError as credential_set does. Writes the
    credential and an audit event when anything changed."""
    tenant_id = getattr(tenant, "pk", None)
    with transaction.atomic():
        credential, creating = _locked_credential(tenant_id, name)
        if not creating and (credential.kind, credential.field) == (kind, field):
            return credential
        credential.kind, credential.field = kind, field
        credential.changed_by, credential.changed_at = actor, timezone.now()
        audited_save(
            credential, tenant_id=tenant_id, actor=actor,
            action="credential.create" if creating else "credential.update",
            data={"name": name, "kind": kind, "field": field, "per_subject": credential.per_subject,
                  "value_changed": False},
        )
        upstreams_changed()
    return credential


def credential_delete(*, credential: Credential, actor: str) -> None:
    """Delete a credential no upstream uses (ProtectedError otherwise), with its users' tokens."""
    with transaction.atomic():
        audit_record(tenant_id=credential.tenant_id, actor=actor, action="credential.delete",
                     target=credential, data={"name": credential.name})
        credential.delete()


def _refuse_unless_per_subject(credential: Credential) -> None:
    if not credential.per_subject:
        raise ValidationError(
            f"Credential {credential.name} is not per end user: it has one value for everyone, "
            "set by an operator."
        )


def credential_set_for_subject(
    *, credential: Credential, agent_id: int, subject: str, value: str, actor: str
) -> SubjectCredential:
    """Store (or replace) one end user's own value of a per-subject credential, as the agent
    `agent_id` registers it (the caller has checked the user's session): only that agent's
    calls send it. Raises ValidationError (not per subject, or a value that cannot be
    stored) or SubjectsFull (a new token past TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL); writes the
    value encrypted and an audit event naming the subject."""
    _refuse_unless_per_subject(credential)
    _check_value(value, kind=credential.kind)
    with transaction.atomic():
        _refuse_a_subject_past_the_limit(credential, agent_id, subject)
        own, created = SubjectCredential.objects.update_or_create(
            credential=credential, agent_id=agent_id, subject=subject,
            defaults={"ciphertext": encrypt(value), "last4": last4(value), "changed_at": timezone.now()},
        )
        audit_record(
            tenant_id=credential.tenant_id, actor=actor, target=credential,
            action="credential.subject_set" if created else "credential.subject_replace",
            data={"name": credential.name, "subject": subject},
        )
        upstreams_changed()
    return own


def _refuse_a_subject_past_the_limit(credential: Credential, agent_id: int, subject: str) -> None:
    """Raises SubjectsFull when this would be one end user's token too many. The credential's
    row is locked first, so concurrent registrations are counted one after the other."""
    Credential.objects.select_for_update().filter(pk=credential.pk).first()
    limit = settings.TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL
    held = SubjectCredential.objects.filter(credential=credential)
    if held.count() >= limit and not held.filter(agent_id=agent_id, subject=subject).exists():
        raise SubjectsFull(credential.name, limit)


def credential_delete_for_subject(
    *, credential: Credential, agent_id: int, subject: str, actor: str
) -> bool:
    """Forget the value one end user registered through the agent `agent_id` (others' stay);
    True if there was one. Writes an audit event when so."""
    with transaction.atomic():
        deleted, _ = SubjectCredential.objects.filter(
            credential=credential, agent_id=agent_id, subject=subject
        ).delete()
        if deleted:
            audit_record(
                tenant_id=credential.tenant_id, actor=actor, target=credential,
                action="credential.subject_delete", data={"name": credential.name, "subject": subject},
            )
            upstreams_changed()
    return bool(deleted)


def credentials_rotate(*, actor: str) -> int:
    """Re-encrypt every stored value under the newest key of TOOLHUB_ENCRYPTION_KEYS, in one
    transaction; returns how many values were re-encrypted. Raises InvalidToken (nothing
    changed) when a value is readable by no configured key. Writes an audit event per
    credential."""
    count = 0
    with transaction.atomic():
        for credential in Credential.objects.select_for_update().order_by("pk"):
            subjects = SubjectCredential.objects.select_for_update().filter(credential=credential)
            values: list[Credential | SubjectCredential] = [credential, *subjects]
            for row in values:
                if row.ciphertext:
                    row.ciphertext = reencrypt(row.ciphertext)
                    row.save(update_fields=["ciphertext"])
                    count += 1
            audit_record(tenant_id=credential.tenant_id, actor=actor, action="credential.rotate",
                         target=credential, data={"name": credential.name, "subjects": len(values) - 1})
    return count
