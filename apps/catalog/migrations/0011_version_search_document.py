"""The search document of every tool version (what request_capability's search reads), filled
for the versions that exist, and its PostgreSQL indexes: full-text (`simple` configuration, so
no language's stemming mangles another's words) and pg_trgm trigrams. Both are PostgreSQL's
own; other databases (SQLite for the demo) skip them and search without an index."""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations, models

from apps.catalog.search_text import search_document

INDEXES = (
    "CREATE INDEX IF NOT EXISTS catalog_version_search_fts ON catalog_toolversion "
    "USING gin (to_tsvector('simple', search_document))",
    "CREATE INDEX IF NOT EXISTS catalog_version_search_trgm ON catalog_toolversion "
    "USING gin (search_document gin_trgm_ops)",
)
DROP_INDEXES = (
    "DROP INDEX IF EXISTS catalog_version_search_fts",
    "DROP INDEX IF EXISTS catalog_version_search_trgm",
)


def fill_documents(apps, schema_editor):
    ToolVersion = apps.get_model("catalog", "ToolVersion")
    for version in ToolVersion.objects.select_related("tool").iterator(chunk_size=500):
        document = search_document(name=version.tool.name, description=version.description,
                                   parameters=version.parameters)
        ToolVersion.objects.filter(pk=version.pk).update(search_document=document)


def _on_postgresql(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_version_output_schema_and_annotations'),
    ]

    operations = [
        migrations.AddField(
            model_name='toolversion',
            name='search_document',
            field=models.TextField(blank=True, editable=False),
        ),
        migrations.RunPython(fill_documents, migrations.RunPython.noop),
        # A no-op on databases other than PostgreSQL. pg_trgm is a trusted extension: the
        # database's owner may create it without being a superuser.
        TrigramExtension(),
        migrations.RunPython(_on_postgresql(INDEXES), _on_postgresql(DROP_INDEXES)),
    ]
