"""Read replicas: with a `replica` alias and ReplicaRouter, the admin's lists, the dashboard
and the catalog export read the replica; the pipeline, the ledger, forms, actions, writes,
transactions and who is logged in stay on the primary. The replica alias is a TEST MIRROR
of the test database (toolhub/settings/test.py): the tests commit their rows (transactional
tests), so both connections see them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.audit.models import Invocation
from apps.capabilities.models import CapabilityStatus
from apps.common.replicas import replica_reads
from apps.tenancy.models import Tenant
from tests.admin.conftest import build_tenant_world
from tests.gateway.conftest import _reset_runs, agent, api, invoke, publish_tool, session_for  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica"])

ROUTER = "apps.common.replicas.ReplicaRouter"
WHO_IS_LOGGED_IN = ("django_session", "auth_user", "auth_permission", "auth_group", "django_content_type",
                    "tenancy_staffscope")


@pytest.fixture
def router(settings):
    settings.DATABASE_ROUTERS = [ROUTER]


@contextmanager
def queries() -> Iterator[tuple[CaptureQueriesContext, CaptureQueriesContext]]:
    with CaptureQueriesContext(connections["default"]) as primary, \
            CaptureQueriesContext(connections["replica"]) as replica:
        yield primary, replica


def tables(captured: CaptureQueriesContext) -> set[str]:
    return {table for query in captured.captured_queries
            for table in re.findall(r'(?:FROM|JOIN|INTO|UPDATE) "(\w+)"', query["sql"])}


def only_reads(captured: CaptureQueriesContext) -> bool:
    return all(q["sql"].lstrip().upper().startswith("SELECT") for q in captured.captured_queries)


@pytest.fixture
def acme():
    return build_tenant_world("acme")


@pytest.fixture
def superuser() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser(username="root", password="pw"))
    return client


def test_the_dashboard_reads_the_replica_and_who_is_logged_in_the_primary(router, acme, superuser):
    with queries() as (primary, replica):
        response = superuser.get(reverse("admin:toolhub_dashboard") + "?window=7d")

    assert response.status_code == 200 and response.context["overview"].calls_total == 1
    assert {"audit_invocation", "ledger_ledgerentry", "capabilities_capabilityrequest",
            "dashboards_rollupcoverage"} <= tables(replica)
    assert only_reads(replica)
    assert tables(primary) and tables(primary) <= set(WHO_IS_LOGGED_IN)


def test_admin_lists_read_the_replica_and_forms_and_actions_the_primary(router, acme, superuser):
    entries = reverse("admin:ledger_ledgerentry_changelist")
    with queries() as (primary, replica):
        assert superuser.get(entries).status_code == 200
    assert "ledger_ledgerentry" in tables(replica) and "ledger_ledgerentry" not in tables(primary)

    with queries() as (primary, replica):
        page = superuser.get(reverse("admin:ledger_ledgerentry_change", args=[acme.entry.pk]))
    assert page.status_code == 200 and replica.captured_queries == []

    with queries() as (primary, replica):
        done = superuser.post(reverse("admin:capabilities_capabilityrequest_changelist"), {
            "action": "mark_planned", "_selected_action": [acme.capability.pk]})
    assert done.status_code == 302 and replica.captured_queries == []
    acme.capability.refresh_from_db()
    assert acme.capability.status == CapabilityStatus.PLANNED


def test_invokes_read_and_write_only_the_primary(router, api, publish_tool, session_for):  # noqa: F811
    publish_tool("lookup")
    publish_tool("change", side_effect="write")
    with queries() as (primary, replica):
        read = invoke(api, "lookup", {"query": "x", "user_id": "u1"}, session=session_for("u1"))
        write = invoke(api, "change", {"query": "x", "user_id": "u1"}, session=session_for("u1"),
                       call_id="c2")

    assert read.json()["status"] == "ok" and write.json()["status"] == "ok"
    assert {"catalog_toolversion", "ledger_ledgerentry"} <= tables(primary)
    assert replica.captured_queries == []
    assert Invocation.objects.count() == 2  # the log's COPY, on the primary's connection


def test_in_a_replica_block_writes_transactions_and_logins_use_the_primary(router, acme):
    with replica_reads():
        with queries() as (primary, replica):
            list(Tenant.objects.all())
        assert tables(replica) == {"tenancy_tenant"} and primary.captured_queries == []

        with queries() as (primary, replica):
            with transaction.atomic():
                list(Tenant.objects.all())
                Tenant.objects.create(slug="initech", name="Initech")
            list(User.objects.all())
        assert replica.captured_queries == []
        assert {"tenancy_tenant", "auth_user"} <= tables(primary)


def test_the_catalog_export_reads_the_replica(router, acme, capsys):
    with queries() as (primary, replica):
        call_command("catalog_export", "--tenant", "acme")

    assert "acme_tool" in capsys.readouterr().out
    assert {"tenancy_tenant", "catalog_tool"} <= tables(replica) and primary.captured_queries == []


def test_without_a_replica_router_every_query_reads_the_primary(acme, superuser):
    with queries() as (primary, replica):
        response = superuser.get(reverse("admin:toolhub_dashboard"))
        superuser.get(reverse("admin:ledger_ledgerentry_changelist"))

    assert response.status_code == 200 and replica.captured_queries == []
    assert "audit_invocation" in tables(primary)


def test_settings_add_the_replica_alias_only_when_its_url_is_set(monkeypatch):
    from toolhub.settings.base import databases_with_replica

    default = {"NAME": "toolhub"}
    monkeypatch.delenv("DATABASE_REPLICA_URL", raising=False)
    assert databases_with_replica(default) == {"default": default}

    monkeypatch.setenv("DATABASE_REPLICA_URL", "postgres://reader@replica.internal:5432/toolhub")
    replica = databases_with_replica(default)["replica"]
    assert (replica["HOST"], replica["USER"], replica["NAME"]) == ("replica.internal", "reader", "toolhub")
    assert replica["CONN_MAX_AGE"] > 0 and replica["TEST"] == {"MIRROR": "default"}
