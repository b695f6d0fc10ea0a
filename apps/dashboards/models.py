"""Hourly rollups of the invocation log, which the dashboard reads instead of raw rows for
every whole hour before the current one (apps/dashboards/rollups.py writes them)."""

from __future__ import annotations

from django.db import models


class InvocationRollup(models.Model):
    """Calls of one tenant, tool name, outcome and hour."""

    hour = models.DateTimeField()
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField(max_length=200)
    # Whether the calls named a tool version (Invocation.version_number set): the latency
    # chart keeps only tools that exist, as it does on raw rows.
    has_version = models.BooleanField()
    status = models.CharField(max_length=20)
    kind = models.CharField(max_length=30, blank=True)
    # Whether the calls were made by a code run's code (Invocation.parent_execution_id set):
    # the dashboard counts these inner calls apart.
    from_code = models.BooleanField(default=False)
    calls = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "tenant", "tool_name", "has_version", "status", "kind", "from_code"],
                name="invocation_rollup_unique",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "hour"], name="invocation_rollup_tenant_hour")]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H:00} {self.tool_name} {self.status}: {self.calls}"


class LatencyCounts(models.Model):
    """How many calls of one tenant and tool name took a latency in one bucket
    (apps/dashboards/latency_buckets.py): the mergeable sketch behind the percentiles."""

    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField(max_length=200)
    has_version = models.BooleanField()
    bucket = models.SmallIntegerField()
    calls = models.PositiveIntegerField()

    class Meta:
        abstract = True


class LatencyRollup(LatencyCounts):
    """The latency counts of one UTC hour."""

    hour = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "tenant", "tool_name", "has_version", "bucket"],
                name="latency_rollup_unique",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "hour"], name="latency_rollup_tenant_hour")]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H:00} {self.tool_name} bucket {self.bucket}: {self.calls}"


class DailyLatencyRollup(LatencyCounts):
    """LatencyRollup's counts added up per UTC day, for the whole days of the rolled-up hours:
    a month of percentiles reads 30 rows per tool and bucket instead of 720."""

    day = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "tenant", "tool_name", "has_version", "bucket"],
                name="daily_latency_rollup_unique",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "day"], name="daily_latency_tenant_day")]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} {self.tool_name} bucket {self.bucket}: {self.calls}"


class RollupCoverage(models.Model):
    """The hours [start, end) whose rollups are complete: the dashboard reads raw rows for
    everything outside them."""

    name = models.CharField(max_length=50, primary_key=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name}: {self.start:%Y-%m-%d %H:00} to {self.end:%Y-%m-%d %H:00}"
