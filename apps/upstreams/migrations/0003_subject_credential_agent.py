"""An end user's own token belongs to the agent that registered it.

Existing tokens are given the agent named by the audit event that last stored them
(actor `agent:<id>`); a token no event attributes to an existing agent of its tenant is
deleted: no agent may send it, and its user connects their account again.
"""

import django.db.models.deletion
from django.db import migrations, models


def attribute_to_agents(apps, schema_editor):
    SubjectCredential = apps.get_model("upstreams", "SubjectCredential")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    Agent = apps.get_model("tenancy", "Agent")
    for row in SubjectCredential.objects.select_related("credential").iterator():
        event = (
            AuditEvent.objects.filter(
                target_type="upstreams.Credential", target_id=str(row.credential_id),
                action__in=("credential.subject_set", "credential.subject_replace"),
                data__subject=row.subject, actor__startswith="agent:",
            ).order_by("-at").first()
        )
        agent_id = event.actor.removeprefix("agent:") if event is not None else ""
        agent = (
            Agent.objects.filter(pk=int(agent_id), tenant_id=row.credential.tenant_id).first()
            if agent_id.isdigit() else None
        )
        if agent is None:
            row.delete()
        else:
            row.agent = agent
            row.save(update_fields=["agent"])


class Migration(migrations.Migration):
    dependencies = [
        ("upstreams", "0002_drift_checks_and_status_tool"),
        ("tenancy", "0002_unique_grant_and_policy_messages"),
        ("audit", "0006_audit_list_indexes"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="subjectcredential", name="subject_credential_unique"),
        migrations.AddField(
            model_name="subjectcredential",
            name="agent",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenancy.agent",
                help_text="The agent that registered it; the only one whose calls send it.",
            ),
        ),
        migrations.RunPython(attribute_to_agents, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="subjectcredential",
            name="agent",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenancy.agent",
                help_text="The agent that registered it; the only one whose calls send it.",
            ),
        ),
        migrations.AlterModelOptions(name="subjectcredential", options={"ordering": ["subject", "agent__name"]}),
        migrations.AddConstraint(
            model_name="subjectcredential",
            constraint=models.UniqueConstraint(
                fields=("credential", "agent", "subject"), name="subject_credential_unique_per_agent"
            ),
        ),
    ]
