from django.apps import AppConfig


class CatalogAsCodeConfig(AppConfig):
    """A tenant's catalog as a YAML file: export it, plan and apply it (tools, versions,
    toolsets, grants and policies). A leaf: it reads and writes catalog and tenancy, through
    their services."""

    name = "apps.catalog_as_code"
    label = "catalog_as_code"
    verbose_name = "Catalog as code"
