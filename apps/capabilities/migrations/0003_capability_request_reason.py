"""Capability requests counted apart by reason: missing capabilities (`unknown`) and calls
of an existing tool outside its phase (`not_in_phase`). A row whose kept samples are all
such calls becomes `not_in_phase`; the rest stay `unknown`."""

from django.db import migrations, models


def mark_phase_misses(apps, schema_editor):
    CapabilityRequest = apps.get_model("capabilities", "CapabilityRequest")
    for row in CapabilityRequest.objects.all():
        if row.samples and all(s.get("source") == "outside_toolset" for s in row.samples):
            row.reason = "not_in_phase"
            row.save(update_fields=["reason"])


class Migration(migrations.Migration):

    dependencies = [
        ('capabilities', '0002_initial'),
        ('tenancy', '0002_unique_grant_and_policy_messages'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='capabilityrequest',
            name='capability_unique_name',
        ),
        migrations.AddField(
            model_name='capabilityrequest',
            name='reason',
            field=models.CharField(choices=[('unknown', 'missing: no such tool for the agent, or asked for'), ('not_in_phase', 'exists, called outside its toolset or phase')], default='unknown', help_text='Missing capabilities (unknown tools, request_capability) are counted apart from calls of an existing tool outside the phase that offers it.', max_length=12),
        ),
        migrations.RunPython(mark_phase_misses, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='capabilityrequest',
            constraint=models.UniqueConstraint(fields=('tenant', 'name', 'reason'), name='capability_unique_name_reason'),
        ),
    ]
