"""Three indexes fewer on ledger entries, which every governed write updates (an intent's
INSERT, its outcome's UPDATE, which changes the indexed state and so touches every index).

- tenant_id alone: ledger_unique_call_per_task, ledger_tenant_recent and
  ledger_tenant_state_age lead with it.
- tool_id alone: ledger_tool_recent leads with it.
- key's varchar_pattern_ops index, which unique=True adds on PostgreSQL for LIKE searches:
  a key is only ever looked up whole (the ledger, the admin's exact search). The key stays
  unique by a constraint, which on PostgreSQL is the unique index it had, renamed, so no
  index is rebuilt on a large ledger. SQLite has no such index: its table keeps the key's
  UNIQUE as it is, the same rule under the constraint's name in the migrations' state.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

_KEY_UNIQUE = "ledger_ledgerentry_key_key"
_KEY_LIKE = "ledger_ledgerentry_key_1a6de5ec_like"
_UNIQUE_KEY = "ledger_unique_key"


def key_unique_by_constraint(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {_KEY_LIKE}")
        schema_editor.execute(f"ALTER TABLE ledger_ledgerentry RENAME CONSTRAINT {_KEY_UNIQUE} TO {_UNIQUE_KEY}")


def key_unique_by_field(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE ledger_ledgerentry RENAME CONSTRAINT {_UNIQUE_KEY} TO {_KEY_UNIQUE}")
        schema_editor.execute(f"CREATE INDEX {_KEY_LIKE} ON ledger_ledgerentry (key varchar_pattern_ops)")


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0012_phase_gates"),
        ("ledger", "0008_code_run_admin"),
        ("tenancy", "0004_tools_opened_on_request"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ledgerentry",
            name="tenant",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="tenancy.tenant",
            ),
        ),
        migrations.AlterField(
            model_name="ledgerentry",
            name="tool",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="catalog.tool",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="ledgerentry",
                    name="key",
                    field=models.CharField(max_length=1400),
                ),
                migrations.AddConstraint(
                    model_name="ledgerentry",
                    constraint=models.UniqueConstraint(fields=("key",), name=_UNIQUE_KEY),
                ),
            ],
            database_operations=[migrations.RunPython(key_unique_by_constraint, key_unique_by_field)],
        ),
    ]
