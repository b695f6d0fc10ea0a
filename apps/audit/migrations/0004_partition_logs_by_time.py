"""On PostgreSQL, the invocation log (by day) and the audit events (by week) become tables
partitioned by range of their timestamp, with their rows; other databases keep plain tables.
Why day and week: docs/log-partitions.md."""

from django.db import migrations

from apps.audit.partitioning import partition_table, unpartition_table

# (table, time column, days per partition); the create-ahead job keeps the same periods
# (apps/audit/partitions.py).
TABLES = [("audit_invocation", "created_at", 1), ("audit_auditevent", "at", 7)]
AHEAD_DAYS = 7


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, column, period_days in TABLES:
            partition_table(cursor, table, column, period_days, AHEAD_DAYS)


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, _column, _period_days in TABLES:
            unpartition_table(cursor, table)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_admin_filter_indexes"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
