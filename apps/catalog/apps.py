"""apps.catalog owns the declaration layer: tools, immutable published versions, toolsets and
phases, the checks of a definition, normalizers, exports to model formats, and MCP drift
findings.

May import: upstreams, audit, common (layers contract, pyproject.toml); never tenancy, which
sits beside it.
"""

from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "apps.catalog"
    label = "catalog"
    verbose_name = "Catalog"
