"""One OpenAPI import started from the admin and run by a Celery task (runs.py): the document
until the import has read it, then the import's report or why it failed."""

from __future__ import annotations

from django.db import models

from apps.common.models import TimeStampedModel
from apps.tenancy.models import Tenant


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class OpenAPIImportRun(TimeStampedModel):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    actor = models.CharField(max_length=200)
    # The import's arguments but the document: upstream, base_url, fetched_from, credential,
    # operation_ids.
    options = models.JSONField(default=dict)
    # The uploaded document, stored once; emptied when the run ends (a URL is fetched by the task).
    document = models.BinaryField(null=True, editable=False)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    # What the import did (runs.report_as_data), once done.
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"OpenAPI import {self.pk} ({self.status})"
