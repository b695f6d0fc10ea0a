"""Record who saved each grant, so that grants of shared tools not made by the platform can
be listed (manage.py audit_grants). Existing grants are filled in from their audit events."""

from django.conf import settings
from django.db import migrations, models

# Who the platform's own writers were, by the audit log's name for them.
PLATFORM_ACTORS = {"seed_demo"}
TENANT_ACTORS = {"cli:catalog_apply"}  # a tenant's catalog file


def _by_platform(actor, users, scoped):
    if actor in PLATFORM_ACTORS:
        return True
    if actor in TENANT_ACTORS:
        return False
    if actor.startswith("admin:"):
        user = users.filter(username=actor.removeprefix("admin:")).first()
        if user is None:
            return None
        if scoped.filter(user=user).exists():
            return False
        return True if user.is_superuser else None
    return None


def fill_granted_by(apps, schema_editor):
    Grant = apps.get_model("tenancy", "Grant")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    users = apps.get_model(*settings.AUTH_USER_MODEL.split("."))._default_manager
    scoped = apps.get_model("tenancy", "StaffScope")._default_manager
    for grant in Grant.objects.all().iterator():
        event = (
            AuditEvent.objects.filter(
                target_type="tenancy.Grant", target_id=str(grant.pk),
                action__in=("grant.create", "grant.update"),
            ).order_by("-at").first()
        )
        if event is None:
            continue
        grant.granted_by = event.actor[:200]
        grant.granted_by_platform = _by_platform(event.actor, users, scoped)
        grant.save(update_fields=["granted_by", "granted_by_platform"])


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy", "0002_unique_grant_and_policy_messages"),
        ("audit", "0006_audit_list_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="grant",
            name="granted_by",
            field=models.CharField(
                blank=True, editable=False, help_text="Who saved the grant, as the audit log names them.",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="grant",
            name="granted_by_platform",
            field=models.BooleanField(
                editable=False, null=True,
                help_text="Yes: saved by the platform (a superuser, the seed); no: by a tenant's staff or "
                "a tenant's catalog file; empty: not recorded (saved before ToolHub recorded it).",
            ),
        ),
        migrations.RunPython(fill_granted_by, migrations.RunPython.noop),
    ]
