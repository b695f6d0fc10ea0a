"""Working the triage queue in the admin: operators settle with a note, auditors only look."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.ledger.models import LedgerEntry, LedgerEvent, LedgerState, ReconcileAttempt
from apps.tenancy.models import StaffScope
from tests.gateway.callables import RECONCILE_ANSWERS
from tests.gateway.conftest import invoke

from .conftest import logged_in

pytestmark = pytest.mark.django_db


def in_triage(entry: LedgerEntry, *, hours_ago: float = 2) -> LedgerEntry:
    """The entry as reconciliation leaves it when it gives up: unknown, in the queue."""
    since = timezone.now() - timedelta(hours=hours_ago)
    LedgerEntry.objects.filter(pk=entry.pk).update(state=LedgerState.UNKNOWN, triage_since=since, attempts=3)
    ReconcileAttempt.objects.create(entry=entry, answer="unclear", note="provider busy", actor="reconciler")
    entry.refresh_from_db()
    return entry


def member(username: str, group: str, tenant=None) -> User:
    user = User.objects.create_user(username=username, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    if tenant is not None:
        StaffScope.objects.create(user=user, tenant=tenant)
    return user


@pytest.fixture
def operator(world):
    return logged_in(member("olga", "operators", world.acme.tenant))


@pytest.fixture
def auditor(world):
    return logged_in(member("aude", "auditors", world.acme.tenant))


def _page(entry: LedgerEntry) -> str:
    return reverse("admin:ledger_triageentry_change", args=[entry.pk])


def _button(entry: LedgerEntry, name: str) -> str:
    return reverse("admin:ledger_triageentry_button", args=[entry.pk, name])


def test_the_queue_lists_only_entries_waiting_for_a_person_oldest_first(world, superuser):
    older = in_triage(world.acme.entry, hours_ago=5)
    newer = in_triage(world.globex.entry, hours_ago=1)

    response = superuser.get(reverse("admin:ledger_triageentry_changelist"))

    assert list(response.context["cl"].result_list) == [older, newer]
    page = response.content.decode()
    assert "5 h 0 min" in page and "acme-secret-argument" in page and "unclear: provider busy" in page


def test_an_unknown_entry_still_being_reconciled_is_not_in_the_queue(world, superuser):
    LedgerEntry.objects.filter(pk=world.acme.entry.pk).update(state=LedgerState.UNKNOWN)

    response = superuser.get(reverse("admin:ledger_triageentry_changelist"))

    assert list(response.context["cl"].result_list) == []


def test_the_entry_page_shows_arguments_attempts_timeline_and_the_invocation_log(world, operator):
    entry = in_triage(world.acme.entry)

    response = operator.get(_page(entry))

    page = response.content.decode()
    assert response.status_code == 200
    assert "acme-secret-argument" in page
    assert "Reconciliation attempts and their answers" in page and "provider busy" in page
    assert "acme intent" in page  # the timeline
    assert "task_id=acme-task&amp;call_id=call_1" in page
    assert [b.name for b in response.context["toolhub_panel_buttons"]] == [
        "reconcile", "settle-committed", "settle-failed",
    ]


def test_the_invocation_log_link_lists_the_calls_of_the_entry(world, operator):
    entry = in_triage(world.acme.entry)
    url = (f"{reverse('admin:audit_invocation_changelist')}?tenant__id__exact={entry.tenant_id}"
           f"&task_id={entry.task_id}&call_id={entry.call_id}")

    response = operator.get(url)

    assert list(response.context["cl"].result_list) == [world.acme.invocation]


def test_an_operator_settles_as_committed_with_a_result_and_a_note(world, operator):
    entry = in_triage(world.acme.entry)

    response = operator.post(_button(entry, "settle-committed"), {
        "note": "Checked the provider dashboard: refund re_9 exists.", "result": '{"refund_id": "re_9"}',
    }, follow=True)

    entry.refresh_from_db()
    assert entry.state == LedgerState.COMMITTED and entry.result == {"refund_id": "re_9"}
    assert entry.triage_since is None
    assert "Settled as committed." in response.content.decode()
    event = LedgerEvent.objects.filter(entry=entry).last()
    assert (event.from_state, event.to_state, event.actor) == ("unknown", "committed", "admin:olga")
    audit = AuditEvent.objects.get(action="ledger.settle.committed")
    assert audit.actor == "admin:olga" and "re_9 exists" in audit.note
    # it left the queue
    queue = operator.get(reverse("admin:ledger_triageentry_changelist"))
    assert list(queue.context["cl"].result_list) == []


def test_a_reference_is_kept_as_the_result(world, operator):
    entry = in_triage(world.acme.entry)

    operator.post(_button(entry, "settle-committed"), {"note": "seen upstream", "result": "re_77"})

    entry.refresh_from_db()
    assert entry.result == {"reference": "re_77"}


def test_committed_needs_a_result_and_every_action_needs_a_note(world, operator):
    entry = in_triage(world.acme.entry)

    no_result = operator.post(_button(entry, "settle-committed"), {"note": "ok", "result": " "}, follow=True)
    no_note = operator.post(_button(entry, "settle-failed"), {"note": "  "}, follow=True)
    no_note_reconcile = operator.post(_button(entry, "reconcile"), {"note": ""}, follow=True)

    assert "Give the result (JSON) or the external system" in no_result.content.decode()
    assert "a note is required to settle" in no_note.content.decode()
    assert "a note is required to reconcile" in no_note_reconcile.content.decode()
    entry.refresh_from_db()
    assert entry.state == LedgerState.UNKNOWN
    assert not AuditEvent.objects.filter(action__startswith="ledger.").exists()
    assert entry.reconcile_attempts.count() == 1


def test_settle_as_failed_stores_an_error_the_agent_will_read(world, operator):
    entry = in_triage(world.acme.entry)

    operator.post(_button(entry, "settle-failed"), {"note": "Provider has no such refund."})

    entry.refresh_from_db()
    assert entry.state == LedgerState.FAILED
    assert "Provider has no such refund." in entry.error["hint"]


def test_two_operators_cannot_settle_one_entry_twice(world, operator):
    entry = in_triage(world.acme.entry)
    second = logged_in(member("omar", "operators", world.acme.tenant))
    # both opened the page while it was unknown
    assert second.get(_page(entry)).context["toolhub_panel_buttons"]

    operator.post(_button(entry, "settle-failed"), {"note": "not applied"})
    response = second.post(_button(entry, "settle-committed"), {"note": "applied", "result": "re_1"})

    # the second press is refused: the buttons are gone once the entry is settled
    assert response.status_code == 403
    entry.refresh_from_db()
    assert entry.state == LedgerState.FAILED
    assert AuditEvent.objects.filter(action__startswith="ledger.settle").count() == 1


def test_a_lost_race_inside_the_service_is_reported_not_crashed(world, operator, monkeypatch):
    entry = in_triage(world.acme.entry)
    from apps.ledger import admin as ledger_admin
    from apps.ledger.services import ledger_settle

    def settled_by_someone_else_first(**kwargs):
        ledger_settle(entry=kwargs["entry"], outcome="failed", actor="admin:omar", note="first")
        return ledger_settle(**kwargs)

    monkeypatch.setattr(ledger_admin, "ledger_settle", settled_by_someone_else_first)

    response = operator.post(_button(entry, "settle-committed"), {"note": "applied", "result": "re_1"},
                             follow=True)

    page = response.content.decode()
    assert "Nothing changed: this entry is already failed (someone settled it first)" in page
    entry.refresh_from_db()
    assert entry.state == LedgerState.FAILED and entry.result is None


def test_reconcile_now_asks_the_hook_and_is_audited(world, operator):
    entry = in_triage(world.acme.entry)

    response = operator.post(_button(entry, "reconcile"), {"note": "provider back up"}, follow=True)

    assert "Reconciled: the entry is still unknown." in response.content.decode()
    assert entry.reconcile_attempts.count() == 2
    assert entry.reconcile_attempts.last().actor == "admin:olga"
    assert AuditEvent.objects.get(action="ledger.reconcile_now").note == "provider back up"


def test_an_auditor_sees_the_queue_but_cannot_settle(world, auditor):
    entry = in_triage(world.acme.entry)

    queue = auditor.get(reverse("admin:ledger_triageentry_changelist"))
    page = auditor.get(_page(entry))
    refused = auditor.post(_button(entry, "settle-failed"), {"note": "I should not"})

    assert list(queue.context["cl"].result_list) == [entry]
    assert page.status_code == 200 and page.context["toolhub_panel_buttons"] == []
    assert "Settle as failed" not in page.content.decode()
    assert refused.status_code == 403
    entry.refresh_from_db()
    assert entry.state == LedgerState.UNKNOWN
    assert not AuditEvent.objects.filter(action__startswith="ledger.").exists()


def test_scoped_operators_see_and_settle_only_their_tenant(world, operator):
    in_triage(world.acme.entry)
    foreign = in_triage(world.globex.entry)

    queue = operator.get(reverse("admin:ledger_triageentry_changelist"))
    page = operator.get(_page(foreign))
    refused = operator.post(_button(foreign, "settle-failed"), {"note": "not mine"})

    assert list(queue.context["cl"].result_list) == [world.acme.entry]
    assert "globex" not in queue.content.decode()
    assert page.status_code == 302  # "not found", as for a missing entry
    assert refused.status_code == 302
    foreign.refresh_from_db()
    assert foreign.state == LedgerState.UNKNOWN


def test_the_groups_hold_exactly_the_operator_and_auditor_permissions(db):
    def codenames(group: str) -> set[str]:
        return set(Group.objects.get(name=group).permissions.values_list("codename", flat=True))

    view = {"view_ledgerentry", "view_ledgerevent", "view_reconcileattempt", "view_triageentry",
            "view_approval", "view_pendingapproval", "view_invocation", "view_coderun"}
    assert codenames("operators") == view | {"settle_ledgerentry", "decide_approval"}
    assert codenames("auditors") == view | {"view_auditevent"}


def test_settling_from_the_admin_changes_what_a_replay_answers(api, publish_tool, session_for, agent):
    # given a write whose outcome nobody could find out
    publish_tool("pay", side_effect="write", executor_config={"callable": "tests.write_later_checked"},
                 timeout_s=1)
    body = invoke(api, "pay", '{"query": "order 7"}', session=session_for("u-1")).json()
    assert body["kind"] == "timeout"
    entry = LedgerEntry.objects.get(pk=body["execution_id"])
    RECONCILE_ANSWERS.clear()
    LedgerEntry.objects.filter(pk=entry.pk).update(triage_since=timezone.now(), next_check_at=None)
    operator = logged_in(member("olga", "operators", agent.tenant))

    # when an operator settles it as committed from the triage page
    operator.post(_button(entry, "settle-committed"), {"note": "found it", "result": '{"refund_id": "re_5"}'})

    # then the agent's replay of the same call gets that result, cached
    replay = invoke(api, "pay", '{"query": "order 7"}', session=session_for("u-1")).json()
    assert replay["status"] == "ok" and replay["cached"] is True and replay["data"] == {"refund_id": "re_5"}


def test_the_queue_costs_the_same_queries_for_more_entries(world, superuser):
    from .conftest import build_tenant_world
    from .test_admin_pages import _queries

    in_triage(world.acme.entry)
    url = reverse("admin:ledger_triageentry_changelist")
    few = _queries(superuser, url)

    for slug in ("initech", "umbrella"):
        in_triage(build_tenant_world(slug).entry)

    assert _queries(superuser, url) == few
