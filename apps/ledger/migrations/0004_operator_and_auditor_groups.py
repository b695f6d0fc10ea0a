"""The two roles of the triage queue (issue 4): operators settle and decide, auditors read.

Permissions are normally created after all migrations ran (post_migrate); they are created
here first so that the groups get them on a fresh database too.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

VIEW = [
    ("ledger", "view_ledgerentry"),
    ("ledger", "view_ledgerevent"),
    ("ledger", "view_reconcileattempt"),
    ("ledger", "view_triageentry"),
    ("ledger", "view_approval"),
    ("ledger", "view_pendingapproval"),
    ("audit", "view_invocation"),
]
GROUPS = {
    "operators": [*VIEW, ("ledger", "settle_ledgerentry"), ("ledger", "decide_approval")],
    "auditors": [*VIEW, ("audit", "view_auditevent")],
}


def create_groups(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    for app_config in apps.get_app_configs():
        # create_permissions skips an app without a models module, as every app of a migration
        # state is: any true value lets it through.
        app_config.models_module = True  # type: ignore[assignment]
        create_permissions(app_config, verbosity=0, apps=apps)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        permissions = [
            Permission.objects.get(content_type__app_label=app, codename=codename) for app, codename in codenames
        ]
        group.permissions.set(permissions)


def remove_groups(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0003_triage_queue_and_pending_approvals"),
        ("audit", "0002_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
