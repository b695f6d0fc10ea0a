"""apps.imports (a leaf) owns the OpenAPI and MCP imports and drift detection: reading
documents and tool lists into drafts, the admin's import runs, and the beat jobs that check
MCP servers (keeping their `upstreams.*` task names).

May import: gateway and every app below it (layers contract, pyproject.toml); not
capabilities or catalog_as_code, which sit beside it. No app imports it.
"""

from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "apps.imports"
    label = "imports"
    verbose_name = "Imports"
