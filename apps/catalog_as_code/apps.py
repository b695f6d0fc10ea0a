"""apps.catalog_as_code (a leaf) owns a tenant's catalog, and the platform's part of the
installation, as YAML files: export, plan and apply, through the catalog's, tenancy's and
upstreams' services.

May import: gateway and every app below it (layers contract, pyproject.toml); not
capabilities or imports, which sit beside it. No app imports it.
"""

from django.apps import AppConfig


class CatalogAsCodeConfig(AppConfig):
    name = "apps.catalog_as_code"
    label = "catalog_as_code"
    verbose_name = "Catalog as code"
