"""The audit event list: filters by action, target type, tenant, age and month, exact search,
and filter choices found without a DISTINCT scan of the table, inside the user's tenant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.audit.partitions import create_ahead
from apps.common.admin_filters import indexed_values

pytestmark = pytest.mark.django_db

URL = reverse("admin:audit_auditevent_changelist")


def event(tenant, action: str, *, actor: str = "admin:root", target_type: str = "catalog.Tool",
          target_id: str = "1", at: datetime | None = None) -> AuditEvent:
    created = AuditEvent.objects.create(tenant=tenant, actor=actor, action=action, target_type=target_type,
                                        target_id=target_id)
    if at is not None:
        AuditEvent.objects.filter(pk=created.pk).update(at=at)
    return created


def listed(client, **params) -> set[int]:
    response = client.get(URL, params)
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def choices(client, title: str) -> list[str]:
    """The values a filter offers, by its title, as the page's filter panel lists them."""
    response = client.get(URL)
    spec = next(spec for spec in response.context["cl"].filter_specs if spec.title == title)
    return [choice["display"] for choice in spec.choices(response.context["cl"])][1:]  # after "All"


def test_the_action_and_target_filters_offer_the_values_of_the_users_own_events(world, superuser, acme_staff):
    event(world.acme.tenant, "tool.publish", target_type="catalog.ToolVersion")
    event(world.globex.tenant, "globex.only", target_type="globex.Secret")
    event(None, "toolset.create", target_type="catalog.Toolset")

    everyone = choices(superuser, "action")
    acme = choices(acme_staff, "action")

    assert {"tool.publish", "globex.only", "toolset.create", "agent_key.issue"} <= set(everyone)
    assert everyone == sorted(everyone)
    assert "tool.publish" in acme and "agent_key.issue" in acme
    assert "globex.only" not in acme and "toolset.create" not in acme
    assert "globex.Secret" in choices(superuser, "target type")
    assert "globex.Secret" not in choices(acme_staff, "target type")


def test_filters_show_only_the_matching_events(world, superuser):
    published = event(world.acme.tenant, "tool.publish", target_type="catalog.ToolVersion")
    grant = event(world.globex.tenant, "grant.create", target_type="tenancy.Grant")

    assert listed(superuser, action="tool.publish") == {published.pk}
    assert listed(superuser, target_type="tenancy.Grant") == {grant.pk}
    acme_events = set(AuditEvent.objects.filter(tenant=world.acme.tenant).values_list("pk", flat=True))
    assert listed(superuser, tenant__id__exact=world.acme.tenant.pk) == acme_events


def test_tenant_staff_filtering_by_another_tenants_action_see_nothing(world, acme_staff):
    event(world.globex.tenant, "globex.only")

    assert listed(acme_staff, action="globex.only") == set()


def test_the_age_and_month_filters_narrow_by_when_an_event_happened(world, superuser):
    now = timezone.now()
    create_ahead(back_days=70)
    old = event(world.acme.tenant, "tool.publish", at=now - timedelta(days=60))
    recent = event(world.acme.tenant, "tool.publish", at=now - timedelta(minutes=5))

    assert recent.pk in listed(superuser, age="1d") and old.pk not in listed(superuser, age="30d")
    assert old.pk in listed(superuser, age="gt7d") and recent.pk not in listed(superuser, age="gt7d")
    old_month = (now - timedelta(days=60)).astimezone(UTC)
    assert listed(superuser, month=f"{old_month:%Y-%m}", action="tool.publish") == {old.pk}
    assert f"{old_month:%B %Y}" in choices(superuser, "month")
    assert listed(superuser, month="not-a-month") == set()


def test_the_search_finds_an_actor_action_or_target_id_exactly(world, superuser, acme_staff):
    alice = event(world.acme.tenant, "tool.publish", actor="admin:alice", target_id="4242")
    event(world.globex.tenant, "tool.publish", actor="admin:alice", target_id="4242")

    assert listed(acme_staff, q="admin:alice") == {alice.pk}
    assert listed(acme_staff, q="4242") == {alice.pk}
    assert len(listed(superuser, q="admin:alice")) == 2
    assert listed(superuser, q="alice") == set()  # exact: never a LIKE '%…%' scan of the table


@pytest.mark.parametrize("user", ["superuser", "acme_staff"])
def test_the_list_never_reads_distinct_values_or_counts_every_row(world, request, user):
    client = request.getfixturevalue(user)
    event(world.acme.tenant, "tool.publish")
    client.get(URL)  # warm per-process caches before counting

    with CaptureQueriesContext(connection) as captured:
        assert client.get(URL).status_code == 200

    statements = [q["sql"] for q in captured.captured_queries if '"audit_auditevent"' in q["sql"]]
    assert not [sql for sql in statements if "DISTINCT" in sql.upper()]
    # The action and target type choices: each a walk of an index from value to value.
    assert sum("WITH RECURSIVE" in sql for sql in statements) == 2
    # Rows counted (up to a cap), not the whole table: the unfiltered list estimates its size.
    full_count = 'SELECT COUNT(*) AS "__count" FROM "audit_auditevent"'
    assert not [sql for sql in statements if sql.startswith(full_count)]


def test_indexed_values_are_those_of_the_rows_the_queryset_holds(world):
    event(world.acme.tenant, "b.second")
    event(world.acme.tenant, "a.first")
    event(world.acme.tenant, "a.first")
    event(world.globex.tenant, "c.third")

    acme = indexed_values(AuditEvent.objects.filter(tenant=world.acme.tenant), "action")

    assert acme == ["a.first", "agent_key.issue", "b.second"]
    assert indexed_values(AuditEvent.objects.none(), "action") == []
    with pytest.raises(TypeError, match="join"):
        indexed_values(AuditEvent.objects.filter(tenant__slug="acme"), "action")
