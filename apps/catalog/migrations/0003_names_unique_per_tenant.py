"""Tool and toolset names unique per tenant and within the shared catalog; toolsets get an
owner. An existing toolset whose tenant-owned tools all belong to one tenant becomes that
tenant's (only its agents could call them); any other stays shared."""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


def give_toolsets_their_tenant(apps, schema_editor):
    Toolset = apps.get_model("catalog", "Toolset")
    for toolset in Toolset.objects.all():
        owners = {
            tool.tenant_id
            for tool in [*toolset.tools.all(), *(t for p in toolset.phases.all() for t in p.tools.all())]
            if tool.tenant_id is not None
        }
        if len(owners) == 1:
            toolset.tenant_id = owners.pop()
            toolset.save(update_fields=["tenant"])


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0002_initial'),
        ('tenancy', '0002_unique_grant_and_policy_messages'),
    ]

    operations = [
        migrations.AddField(
            model_name='toolset',
            name='tenant',
            field=models.ForeignKey(blank=True, help_text="Owner. Empty: shared, seen by every tenant's agents (shared tools only).", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='toolsets', to='tenancy.tenant'),
        ),
        migrations.RunPython(give_toolsets_their_tenant, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='tool',
            name='name',
            field=models.CharField(help_text="Unique within its owner, and never the name of a shared tool (or, for a shared tool, of any tenant's).", max_length=64, validators=[django.core.validators.RegexValidator('^[a-z][a-z0-9_]{0,63}$', "Use snake_case: lowercase letters, digits and '_', at most 64.")]),
        ),
        migrations.AlterField(
            model_name='toolset',
            name='name',
            field=models.CharField(help_text="Unique within its owner, and never the name of a shared toolset (or, for a shared toolset, of any tenant's).", max_length=64, validators=[django.core.validators.RegexValidator('^[a-z][a-z0-9_]{0,63}$', "Use snake_case: lowercase letters, digits and '_', at most 64.")]),
        ),
        migrations.AddConstraint(
            model_name='tool',
            constraint=models.UniqueConstraint(condition=models.Q(('tenant__isnull', False)), fields=('tenant', 'name'), name='tool_unique_name_per_tenant', violation_error_message='This tenant already has one of that name.'),
        ),
        migrations.AddConstraint(
            model_name='tool',
            constraint=models.UniqueConstraint(condition=models.Q(('tenant__isnull', True)), fields=('name',), name='tool_unique_shared_name', violation_error_message='The shared catalog already has one of that name.'),
        ),
        migrations.AddConstraint(
            model_name='toolset',
            constraint=models.UniqueConstraint(condition=models.Q(('tenant__isnull', False)), fields=('tenant', 'name'), name='toolset_unique_name_per_tenant', violation_error_message='This tenant already has one of that name.'),
        ),
        migrations.AddConstraint(
            model_name='toolset',
            constraint=models.UniqueConstraint(condition=models.Q(('tenant__isnull', True)), fields=('name',), name='toolset_unique_shared_name', violation_error_message='The shared catalog already has one of that name.'),
        ),
    ]
