"""The invocation log and the audit events on PostgreSQL: partitioned by time, created ahead,
rows routed by their time, a default partition for the rest, retention by whole partitions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from apps.audit import partitioning
from apps.audit.models import AuditEvent, Invocation
from apps.audit.partitions import LOGS, apply_retention, create_ahead
from apps.common.paginators import EstimatedCountPaginator
from apps.ledger.models import LedgerEntry
from tests.admin.conftest import build_tenant_world
from tests.factories import AgentFactory
from tests.ops.test_metrics import scrape, value
from toolhub.celery import app as celery_app

pytestmark = pytest.mark.django_db


def sql(query: str, params: list | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchall()


def partition_of(model, pk: int) -> str:
    return sql(f"SELECT tableoid::regclass::text FROM {model._meta.db_table} WHERE id = %s", [pk])[0][0]


def partition_names(table: str) -> list[str]:
    return [p.name for p in partitioning.partitions_of(connection.cursor(), table)]


def invocation_at(agent, when: datetime, n: int = 0) -> Invocation:
    row = Invocation.objects.create(
        tenant=agent.tenant, agent=agent, task_id=f"task-{n}", call_id=f"call-{n}",
        tool_name="search_orders", status="ok", latency_ms=3.0,
    )
    Invocation.objects.filter(pk=row.pk).update(created_at=when)
    return row


def audit_at(when: datetime, n: int = 0) -> AuditEvent:
    event = AuditEvent.objects.create(actor="ops", action="tool.publish", target_type="t", target_id=str(n))
    AuditEvent.objects.filter(pk=event.pk).update(at=when)
    return event


def test_both_logs_are_partitioned_by_time_with_a_default_and_a_week_ahead():
    today = timezone.now().astimezone(UTC).date()
    for log in LOGS:
        assert sql("SELECT relkind FROM pg_class WHERE relname = %s", [log.table]) == [("p",)]
        names = partition_names(log.table)
        assert names[-1] == f"{log.table}_default"
        for n in range(8):
            start = partitioning.period_start(today + timedelta(days=n), log.period_days)
            assert partitioning.partition_name(log.table, start) in names
    # Django still sees `id` as the key; the table's key holds the time too.
    keys = "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s"
    assert sql(keys, ["audit_invocation_pkey"]) == [("PRIMARY KEY (id, created_at)",)]
    assert sql(keys, ["audit_auditevent_pkey"]) == [("PRIMARY KEY (id, at)",)]


def test_rows_land_in_the_partition_of_their_time_and_move_when_it_changes():
    agent = AgentFactory()
    today = timezone.now().astimezone(UTC).date()
    create_ahead(back_days=3)

    row = invocation_at(agent, timezone.now())
    assert partition_of(Invocation, row.pk) == f"audit_invocation_p{today:%Y%m%d}"
    two_days_ago = timezone.now() - timedelta(days=2)
    Invocation.objects.filter(pk=row.pk).update(created_at=two_days_ago)
    assert partition_of(Invocation, row.pk) == f"audit_invocation_p{two_days_ago:%Y%m%d}"

    # save() and bulk_create work on the partitioned table as on a plain one.
    row.refresh_from_db()
    row.status = "error"
    row.save()
    assert Invocation.objects.get(pk=row.pk).status == "error"
    made = Invocation.objects.bulk_create(
        [Invocation(tenant=agent.tenant, agent=agent, task_id="t", call_id=f"b{n}", tool_name="x",
                    status="ok", latency_ms=1.0) for n in range(3)]
    )
    assert all(item.pk for item in made)
    assert {partition_of(Invocation, item.pk) for item in made} == {f"audit_invocation_p{today:%Y%m%d}"}

    event = audit_at(timezone.now())
    week = partitioning.period_start(today, 7)
    assert partition_of(AuditEvent, event.pk) == f"audit_auditevent_p{week:%Y%m%d}"


def test_the_default_partition_catches_a_row_out_of_range_and_is_reported(client):
    agent = AgentFactory()
    stray = invocation_at(agent, datetime(2001, 2, 3, 12, tzinfo=UTC))
    assert partition_of(Invocation, stray.pk) == "audit_invocation_default"

    out = StringIO()
    call_command("create_partitions", stdout=out)
    assert "audit_invocation: 1 rows in audit_invocation_default" in out.getvalue()
    assert "audit_auditevent: audit_auditevent_default is empty" in out.getvalue()
    samples = scrape(client)
    assert value(samples, "toolhub_log_default_partition_rows", log="invocations") == 1
    assert value(samples, "toolhub_log_oldest_kept_day", log="invocations") == datetime(
        2001, 2, 3, tzinfo=UTC
    ).timestamp()

    # A partition created for its day takes the row out of the default partition.
    with connection.cursor() as cursor:
        assert partitioning.create_partition(cursor, "audit_invocation", 1, datetime(2001, 2, 3).date())
    assert partition_of(Invocation, stray.pk) == "audit_invocation_p20010203"
    assert Invocation.objects.get(pk=stray.pk).call_id == stray.call_id


def test_beat_runs_both_jobs_every_hour_and_they_report_what_they_did(settings):
    settings.TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = 30
    create_ahead(back_days=32, logs=[LOGS[0]])
    connection.cursor().execute("SET CONSTRAINTS ALL IMMEDIATE")
    jobs = {entry["task"]: entry["schedule"] for entry in celery_app.conf.beat_schedule.values()}
    assert jobs["audit.create_partitions"] == jobs["audit.apply_retention"] == 3600.0

    # Workers import every app's tasks module at start (autodiscover_tasks).
    from apps.audit.tasks import apply_retention_task, create_partitions_task

    assert apply_retention_task.apply().get() == {"invocations": 2, "audit": 0}
    assert create_partitions_task.apply().get() == {"invocations": 0, "audit": 0}


def test_create_partitions_is_idempotent_and_says_what_it_did():
    first, second = StringIO(), StringIO()
    call_command("create_partitions", "--ahead-days", "10", stdout=first)
    call_command("create_partitions", "--ahead-days", "10", stdout=second)
    today = timezone.now().astimezone(UTC).date()
    days = [today + timedelta(days=n) for n in (8, 9, 10)]  # the migration made 7 ahead
    created = ", ".join(f"audit_invocation_p{day:%Y%m%d}" for day in days)
    assert f"audit_invocation: created {created}\n" in first.getvalue()
    assert "audit_invocation: created none (all there already)" in second.getvalue()
    assert "audit_auditevent: created none (all there already)" in second.getvalue()


def test_retention_drops_exactly_the_partitions_past_it_and_leaves_the_ledger(settings, client):
    settings.TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = 30
    settings.TOOLHUB_AUDIT_RETENTION_DAYS = 21
    now = timezone.now()
    today = now.astimezone(UTC).date()
    world = build_tenant_world("acme")
    LedgerEntry.objects.filter(pk=world.entry.pk).update(created_at=now - timedelta(days=90))
    create_ahead(back_days=45)
    rows = {age: invocation_at(world.agent, now - timedelta(days=age), n=age) for age in range(45)}
    events = {age: audit_at(now - timedelta(days=age), n=age) for age in (0, 20, 27, 28, 35, 44)}
    invocation_partitions_before = partition_names("audit_invocation")
    audit_partitions_before = partition_names("audit_auditevent")
    counts_before = (Invocation.objects.count(), AuditEvent.objects.count())
    # The rows' deferred foreign key checks are due at the test transaction's end; PostgreSQL
    # drops no table with checks pending, so run them now, as a commit would have.
    connection.cursor().execute("SET CONSTRAINTS ALL IMMEDIATE")

    out = StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert partition_names("audit_invocation") == invocation_partitions_before
    assert partition_names("audit_auditevent") == audit_partitions_before
    assert (Invocation.objects.count(), AuditEvent.objects.count()) == counts_before
    assert "would drop audit_invocation_p" in out.getvalue()

    reports = apply_retention(now=now)

    cutoff = partitioning.midnight(today - timedelta(days=30))
    assert reports[0].cutoff == cutoff
    expected = sorted(
        partitioning.partition_name("audit_invocation", (now - timedelta(days=age)).date())
        for age in range(31, 46)  # created 45 days back, kept from 30 days back
    )
    assert sorted(reports[0].dropped) == expected
    assert set(partition_names("audit_invocation")) == set(invocation_partitions_before) - set(expected)
    kept = set(Invocation.objects.values_list("pk", flat=True))
    assert kept == {row.pk for age, row in rows.items() if age <= 30} | {world.invocation.pk}
    # Audit weeks go only once all of the week is past 21 days.
    audit_cutoff = partitioning.midnight(today - timedelta(days=21))
    kept_events = set(AuditEvent.objects.values_list("pk", flat=True))
    for age, event in events.items():
        week = partitioning.period_start((now - timedelta(days=age)).date(), 7)
        week_end = partitioning.midnight(week + timedelta(days=7))
        assert (event.pk in kept_events) == (week_end > audit_cutoff), age
    assert LedgerEntry.objects.filter(pk=world.entry.pk).exists()
    assert sql("SELECT relkind FROM pg_class WHERE relname = 'audit_invocation_default'") == [("r",)]

    assert apply_retention(now=now)[0].dropped == []
    oldest = value(scrape(client), "toolhub_log_oldest_kept_day", log="invocations")
    assert oldest == partitioning.midnight((now - timedelta(days=30)).astimezone(UTC).date()).timestamp()


def test_without_partitions_retention_deletes_the_old_rows(monkeypatch, settings):
    monkeypatch.setattr("apps.audit.partitions.partitioned", lambda: False)
    settings.TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = 30
    agent = AgentFactory()
    create_ahead(back_days=40)
    old = invocation_at(agent, timezone.now() - timedelta(days=35))
    recent = invocation_at(agent, timezone.now())

    dry = StringIO()
    call_command("apply_retention", "--dry-run", stdout=dry)
    assert "would delete 1 rows" in dry.getvalue()
    assert set(Invocation.objects.values_list("pk", flat=True)) == {old.pk, recent.pk}

    out = StringIO()
    call_command("apply_retention", stdout=out)

    assert list(Invocation.objects.values_list("pk", flat=True)) == [recent.pk]
    assert "audit_invocation (keeps 30 days" in out.getvalue() and "deleted 1 rows" in out.getvalue()
    assert old.pk not in Invocation.objects.values_list("pk", flat=True)


def test_the_admin_lists_and_pages_of_partitioned_logs_work(client):
    from django.contrib.auth.models import User

    world = build_tenant_world("acme")
    client.force_login(User.objects.create_superuser(username="root", password="pw"))
    audit_at(timezone.now())
    for url in (
        reverse("admin:audit_invocation_changelist"),
        reverse("admin:audit_invocation_changelist") + "?status=ok&age=1d",
        reverse("admin:audit_invocation_changelist") + "?q=acme-task",
        reverse("admin:audit_invocation_change", args=[world.invocation.pk]),
        reverse("admin:audit_auditevent_changelist"),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
    assert "acme-task" in client.get(reverse("admin:audit_invocation_changelist")).content.decode()


def test_the_invocation_list_estimates_its_size_from_the_partitions(monkeypatch):
    agent = AgentFactory()
    create_ahead(back_days=2)
    for n in range(12):
        invocation_at(agent, timezone.now() - timedelta(days=n % 3), n=n)
    # As autovacuum does: the partitions, never the partitioned table itself.
    for name in partition_names("audit_invocation"):
        connection.cursor().execute(f"ANALYZE {name}")
    monkeypatch.setattr("apps.common.paginators.COUNT_CAP", 5)

    paginator = EstimatedCountPaginator(Invocation.objects.order_by("-created_at"), 100)

    assert (paginator.count, paginator.estimated) == (12, True)


@pytest.mark.django_db(transaction=True)
def test_retention_gives_way_to_a_session_holding_the_log_and_drops_on_the_next_run(monkeypatch, settings):
    monkeypatch.setattr("apps.audit.partitions.LOCK_TIMEOUT_MS", 300)
    settings.TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = 30
    create_ahead(back_days=33, logs=[LOGS[0]])
    past = partitioning.partition_name("audit_invocation", timezone.now().date() - timedelta(days=33))

    with psycopg.connect(**connection.get_connection_params()) as reader:
        reader.execute("SELECT count(*) FROM audit_invocation")  # a long report, still open
        out = StringIO()
        call_command("apply_retention", stdout=out)
        assert past in apply_retention()[0].postponed
        assert past in partition_names("audit_invocation")
        assert past in out.getvalue() and "stayed locked by other sessions" in out.getvalue()

    assert past in apply_retention()[0].dropped
    assert past not in partition_names("audit_invocation")
