"""apps.upstreams owns the external systems tools call and how to authenticate to them:
upstreams, credentials encrypted at rest, end users' own tokens.

May import: audit, common (layers contract, pyproject.toml); tenants by model reference.
"""

from django.apps import AppConfig


class UpstreamsConfig(AppConfig):
    name = "apps.upstreams"
    label = "upstreams"
    verbose_name = "Upstreams"
