"""Code runs as their own admin page (a proxy of the ledger entry), which operators and
auditors read as they read the ledger (0004)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

GROUPS = ("operators", "auditors")


def grant_view(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # Permissions are made after all migrations (post_migrate): made here first, as in 0004.
    app_config = apps.get_app_config("ledger")
    app_config.models_module = True  # type: ignore[assignment]
    create_permissions(app_config, verbosity=0, apps=apps)
    app_config.models_module = None
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.get(content_type__app_label="ledger", codename="view_coderun")
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GROUPS):
        group.permissions.add(view)


def revoke_view(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Permission = apps.get_model("auth", "Permission")
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GROUPS):
        group.permissions.remove(*Permission.objects.filter(content_type__app_label="ledger",
                                                            codename="view_coderun"))


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0007_code_runs"),
        ("ledger", "0004_operator_and_auditor_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="CodeRun",
            fields=[],
            options={
                "verbose_name": "code run",
                "verbose_name_plural": "code runs",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("ledger.ledgerentry",),
        ),
        migrations.RunPython(grant_view, revoke_view),
    ]
