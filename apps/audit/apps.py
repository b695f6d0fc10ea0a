"""apps.audit owns the append-only audit events and the invocation log (table and batched
writer), their time partitions and retention (beat jobs).

May import: common (layers contract, pyproject.toml).
"""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "apps.audit"
    label = "audit"
    verbose_name = "Audit"
