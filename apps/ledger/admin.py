"""The side-effect ledger in the admin: read-only records, and the operators' two queues.

- Ledger entries: every entry, filterable, each with its timeline.
- Triage queue: unknown entries reconciliation gave up on, oldest first; an operator
  reconciles again or settles each one with a note (ledger services, never a form edit).
- Pending approvals: high-impact calls waiting for an operator's approve / reject.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from apps.catalog.admin_filters import ScopedToolFilter
from apps.common.admin import (
    ExactSearchMixin,
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    TenantScopedAdmin,
    admin_actor,
    admin_scope,
    json_display,
    pretty_json,
    redirect_to_change,
    restrict_to_scope,
    validation_message,
)
from apps.common.admin_buttons import ObjectButton, ObjectButtonsMixin
from apps.common.admin_filters import AgeFilter
from apps.common.executor_kinds import CODE_RUN_KIND
from apps.common.paginators import EstimatedCountPaginator

from .approvals import ApprovalRefused, approval_decide
from .models import (
    Approval,
    LedgerEntry,
    LedgerEvent,
    LedgerState,
    PendingApproval,
    ReconcileAttempt,
    TriageEntry,
)
from .selectors import approvals_pending, triage_queue
from .services import ledger_settle
from .states import TransitionRefused
from .triage import ledger_reconcile_now

SETTLE_PERMISSION = "ledger.settle_ledgerentry"
DECIDE_PERMISSION = "ledger.decide_approval"
VIEW_CODE_RUN_PERMISSION = "ledger.view_coderun"


def age(since: datetime | None) -> str:
    """How long ago `since` was, short: "45 s", "12 min", "3 h 5 min", "2 d 4 h"."""
    return "–" if since is None else span((timezone.now() - since).total_seconds())


def span(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{max(seconds, 0)} s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours < 1:
        return f"{minutes} min"
    if days < 1:
        return f"{hours} h {minutes % 60} min"
    return f"{days} d {hours % 24} h"


def invocation_log_url(entry: LedgerEntry) -> str:
    """The invocation log narrowed to every attempt of this entry's call."""
    query = urlencode(
        {"tenant__id__exact": entry.tenant_id, "task_id": entry.task_id, "call_id": entry.call_id}
    )
    return f"{reverse('admin:audit_invocation_changelist')}?{query}"


class LedgerEventInline(ReadOnlyInline):
    model = LedgerEvent
    fields = ("at", "from_state", "to_state", "actor", "note", "data_json")
    readonly_fields = fields
    data_json = json_display("data")
    verbose_name_plural = "timeline"


class ReconcileAttemptInline(ReadOnlyInline):
    model = ReconcileAttempt
    fields = ("at", "actor", "answer", "note")
    readonly_fields = fields
    verbose_name_plural = "reconciliation attempts and their answers"


class LedgerAdminBase(ExactSearchMixin, ReadOnlyAdminMixin, TenantScopedAdmin):
    """What both ledger pages show of an entry; lists stay fast on millions of rows."""

    list_select_related = ("tenant", "agent", "tool", "version")
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # a count per filter choice: a scan of the table each
    paginator = EstimatedCountPaginator
    exact_search_fields = ("key", "task_id")
    search_help_text = "A whole task id or ledger key, not a word of one (e.g. demo-20261201-221821-timeout)."
    inlines = (ReconcileAttemptInline, LedgerEventInline)

    arguments_json = json_display("arguments")
    result_json = json_display("result")
    error_json = json_display("error", "stored error envelope")

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, obj: LedgerEntry) -> str:
        return obj.agent.name

    @admin.display(description="version", ordering="version__number")
    def version_number(self, obj: LedgerEntry) -> int:
        return obj.version.number

    @admin.display(description="age", ordering="created_at")
    def entry_age(self, obj: LedgerEntry) -> str:
        return age(obj.created_at)

    @admin.display(description="arguments")
    def arguments_short(self, obj: LedgerEntry) -> str:
        return Truncator(json.dumps(obj.arguments, ensure_ascii=False)).chars(80)

    @admin.display(description="invocation log")
    def invocations_link(self, obj: LedgerEntry) -> str:
        return format_html('<a href="{}">Every call of {} / {}</a>', invocation_log_url(obj), obj.task_id,
                           obj.call_id)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(LedgerAdminBase):
    list_display = ("created_at", "entry_age", "tenant", "agent_name", "tool", "version_number", "task_id",
                    "call_id", "state", "attempts", "settled_at")
    list_filter = ("state", ScopedToolFilter, ("tenant", admin.RelatedFieldListFilter), AgeFilter)
    ordering = ("-created_at",)
    fields = ("key", "state", "tenant", "agent", "tool", "version", "subject", "task_id", "call_id",
              "args_hash", "arguments_json", "result_json", "error_json", "attempts", "next_check_at",
              "triage_since", "settled_at", "created_at", "updated_at", "invocations_link")
    readonly_fields = (*fields, "code_run")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_fields(request, obj)
        if obj is None or not request.user.has_perm(VIEW_CODE_RUN_PERMISSION):
            return fields
        if obj.parent_id is not None or obj.version.executor == CODE_RUN_KIND:
            return [*fields, "code_run"]
        return fields

    @admin.display(description="code run")
    def code_run(self, obj: LedgerEntry) -> str:
        """An inner write: the run whose code made it. A run: its own page, with the code."""
        if obj.parent is None:
            url = reverse("admin:ledger_coderun_change", args=[obj.pk])
            return format_html('<a href="{}" id="code-run">This entry is a code run: its code, stdout and '
                               "inner calls</a>", url)
        url = reverse("admin:ledger_coderun_change", args=[obj.parent.pk])
        return format_html('<a href="{}" id="parent-run">Made by the code of run {} (task {})</a>', url,
                           obj.parent.call_id, obj.parent.task_id)


@admin.register(TriageEntry)
class TriageEntryAdmin(ObjectButtonsMixin, LedgerAdminBase):
    """Oldest first; each entry with its arguments, attempts and timeline, and the actions
    that settle it. A settled entry stays viewable here (from its link) but leaves the list."""

    list_display = ("waiting", "entry_age", "tool", "tenant", "agent_name", "arguments_short", "attempts",
                    "last_answer")
    list_display_links = ("waiting", "tool")
    list_filter = (ScopedToolFilter, ("tenant", admin.RelatedFieldListFilter))
    ordering = ("triage_since",)
    fields = ("state", "waiting", "entry_age", "tenant", "agent", "tool", "version", "subject", "task_id",
              "call_id", "key", "arguments_json", "attempts", "triage_since", "created_at", "settled_at",
              "result_json", "error_json", "invocations_link")
    readonly_fields = fields

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        title = "Triage queue: unknown outcomes reconciliation could not settle, oldest first"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    def get_queryset(self, request: HttpRequest) -> QuerySet[LedgerEntry]:
        return restrict_to_scope(
            triage_queue().select_related(*self.list_select_related).prefetch_related("reconcile_attempts"),
            admin_scope(request), tenant_path="tenant",
        )

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # Any entry of the user's tenant, settled or not: the operator who loses a race to
        # settle must see what the winner did, not "not found".
        entries = restrict_to_scope(TriageEntry.objects.select_related(*self.list_select_related),
                                    admin_scope(request), tenant_path="tenant")
        try:
            return entries.get(pk=object_id)
        except (TriageEntry.DoesNotExist, ValidationError, ValueError):
            return None

    @admin.display(description="in the queue for", ordering="triage_since")
    def waiting(self, obj: LedgerEntry) -> str:
        return age(obj.triage_since)

    @admin.display(description="last answer")
    def last_answer(self, obj: LedgerEntry) -> str:
        attempts = list(obj.reconcile_attempts.all())
        if not attempts:
            return "no reconcile hook asked"
        last = attempts[-1]
        return Truncator(f"{last.answer}: {last.note}").chars(80)

    def object_buttons(self, request: HttpRequest, obj: LedgerEntry) -> list[ObjectButton]:
        if obj.state != LedgerState.UNKNOWN or not request.user.has_perm(SETTLE_PERMISSION):
            return []
        return [
            ObjectButton("reconcile", "Reconcile now", note_required=True,
                         help="Ask the executor's reconcile hook again, at once."),
            ObjectButton("settle-committed", "Settle as committed", note_required=True,
                         extra_field="result", extra_label="Result (JSON) or the external system's reference",
                         help="You checked: the call was applied. Replays will return this result.",
                         confirm="Settle this entry as committed? This cannot be undone."),
            ObjectButton("settle-failed", "Settle as failed", note_required=True,
                         help="You checked: the call was certainly not applied. Replays will say so.",
                         confirm="Settle this entry as failed? This cannot be undone."),
        ]

    def run_object_button(self, request: HttpRequest, obj: LedgerEntry, name: str) -> HttpResponse:
        actor, note = admin_actor(request), request.POST.get("note", "").strip()
        try:
            if name == "reconcile":
                state = ledger_reconcile_now(entry=obj, actor=actor, note=note)
                outcome = "still unknown" if state == LedgerState.UNKNOWN else f"now {state}"
                messages.info(request, f"Reconciled: the entry is {outcome}.")
            elif name == "settle-committed":
                result = parse_result(request.POST.get("result", ""))
                ledger_settle(entry=obj, outcome=LedgerState.COMMITTED, actor=actor, note=note, result=result)
                messages.success(request, "Settled as committed.")
            else:
                ledger_settle(entry=obj, outcome=LedgerState.FAILED, actor=actor, note=note)
                messages.success(request, "Settled as failed.")
        except ValidationError as error:
            messages.error(request, validation_message(error))
        except TransitionRefused:
            obj.refresh_from_db()
            messages.error(request, f"Nothing changed: this entry is already {obj.state} (someone settled it "
                                    "first). Its timeline below says who and why.")
        return redirect_to_change(self, obj)


def parse_result(text: str) -> Any:
    """What an operator typed as a committed call's result: JSON, or else a reference."""
    text = text.strip()
    if not text:
        raise ValidationError(
            "Give the result (JSON) or the external system's reference of the applied call."
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"reference": text}


class ApprovalAdminBase(ReadOnlyAdminMixin, TenantScopedAdmin):
    list_select_related = ("tenant", "entry__tool", "version")
    show_full_result_count = False

    @admin.display(description="tool")
    def tool(self, obj: Approval) -> str:
        return f"{obj.entry.tool.name} v{obj.version.number}"

    @admin.display(description="arguments")
    def arguments_json(self, obj: Approval) -> Any:
        return pretty_json(obj.entry.arguments)

    @admin.display(description="arguments")
    def arguments_short(self, obj: Approval) -> str:
        return Truncator(json.dumps(obj.entry.arguments, ensure_ascii=False)).chars(80)

    @admin.display(description="expires in", ordering="expires_at")
    def expires_in(self, obj: Approval) -> str:
        left = (obj.expires_at - timezone.now()).total_seconds()
        return span(left) if left > 0 else "expired"

    @admin.display(description="ledger entry")
    def entry_link(self, obj: Approval) -> str:
        url = reverse("admin:ledger_ledgerentry_change", args=[obj.entry_id])
        return format_html('<a href="{}">{} / {}</a>', url, obj.entry.task_id, obj.entry.call_id)


@admin.register(Approval)
class ApprovalAdmin(ApprovalAdminBase):
    """Every approval and its decision: the history behind the pending queue."""

    list_display = ("created_at", "tenant", "tool", "status", "decided_by", "decided_at", "note")
    list_filter = ("status", ("tenant", admin.RelatedFieldListFilter))
    ordering = ("-created_at",)
    fields = ("status", "tenant", "tool", "entry_link", "reason", "arguments_json", "args_hash", "created_at",
              "expires_at", "decided_by", "decided_at", "note")
    readonly_fields = fields

    def get_model_perms(self, request: HttpRequest) -> dict[str, bool]:
        # Not in the index beside "Pending approvals", the page operators work from: that
        # queue links here, to the decisions behind it.
        return {}


@admin.register(PendingApproval)
class PendingApprovalAdmin(ObjectButtonsMixin, ApprovalAdminBase):
    list_display = ("created_at", "expires_in", "tenant", "tool", "arguments_short", "reason")
    list_display_links = ("created_at", "tool")
    list_filter = (("tenant", admin.RelatedFieldListFilter),)
    ordering = ("expires_at",)
    fields = ("status", "tenant", "tool", "entry_link", "reason", "arguments_json", "created_at",
              "expires_in", "decided_by", "decided_at", "note")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Approval]:
        return restrict_to_scope(approvals_pending().select_related(*self.list_select_related),
                                 admin_scope(request), tenant_path="tenant")

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # Decided approvals stay viewable from their link, with who decided and why.
        approvals = restrict_to_scope(PendingApproval.objects.select_related(*self.list_select_related),
                                      admin_scope(request), tenant_path="tenant")
        try:
            return approvals.get(pk=object_id)
        except (PendingApproval.DoesNotExist, ValidationError, ValueError):
            return None

    def object_buttons(self, request: HttpRequest, obj: Approval) -> list[ObjectButton]:
        if obj.status != "pending" or not request.user.has_perm(DECIDE_PERMISSION):
            return []
        return [
            ObjectButton("approve", "Approve", note_required=True,
                         help="The call runs now, exactly as shown, and the agent gets its result."),
            ObjectButton("reject", "Reject", note_required=True,
                         help="The call is refused; the agent reads your note as the reason."),
        ]

    def run_object_button(self, request: HttpRequest, obj: Approval, name: str) -> HttpResponse:
        try:
            decided = approval_decide(approval=obj, approve=name == "approve", actor=admin_actor(request),
                                      note=request.POST.get("note", ""))
            messages.success(request, f"The call is {decided.status}.")
        except ValidationError as error:
            messages.error(request, validation_message(error))
        except ApprovalRefused as refused:
            messages.error(request, f"Nothing changed: {refused}")
        return redirect_to_change(self, obj)

