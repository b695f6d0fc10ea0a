"""Code runs in the admin: each run_python call with its code, what it printed and returned
or what stopped it, every tool call its code made (the inner calls, with their envelopes)
and the ledger entries of its writes. Read-only, like the rest of the ledger.

A run is a ledger entry of its own; its inner calls are invocation log rows naming the run
as their parent, and each inner write has a ledger entry whose parent is the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from apps.audit.models import Invocation
from apps.common.admin import admin_scope, pretty_json, restrict_to_scope
from apps.common.admin_filters import AgeFilter

from .admin import LedgerAdminBase
from .models import CodeRun, LedgerEntry, LedgerState
from .selectors import INNER_CALLS_SHOWN, code_run_calls, code_runs

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec

# What the sandbox names in an error's raw.limit when a run hits one of its limits.
LIMITS = ("wall_s", "cpu_s", "memory_mb", "max_calls", "max_stdout_bytes", "max_result_bytes", "crashed")
EXCEPTION = "exception"


@dataclass(frozen=True)
class RunReport:
    """What a run's entry says of how it ended: its result, or what stopped it (empty while
    it has no outcome)."""

    result: Any = None
    stdout: str = ""
    calls: int | None = None
    limit: str = ""  # the limit hit; empty for an exception or a run that finished
    traceback: str = ""
    kind: str = ""
    message: str = ""
    hint: str = ""


def run_report(run: LedgerEntry) -> RunReport:
    """Read from the stored JSON: `result` of a committed run, the error envelope's `raw` of a
    failed one. Tolerant of anything else (a failure before the code ran has no raw)."""
    if run.state == LedgerState.COMMITTED and isinstance(run.result, dict):
        result = run.result
        return RunReport(result=result.get("result"), stdout=str(result.get("stdout") or ""),
                         calls=_count(result.get("calls")))
    if run.state == LedgerState.FAILED:
        error: dict[str, Any] = run.error if isinstance(run.error, dict) else {}
        raw: dict[str, Any] = error["raw"] if isinstance(error.get("raw"), dict) else {}
        return RunReport(
            stdout=str(raw.get("stdout") or ""), calls=_count(raw.get("calls")),
            limit=str(raw.get("limit") or ""), traceback=str(raw.get("traceback") or ""),
            kind=str(error.get("kind") or ""), message=str(error.get("message") or ""),
            hint=str(error.get("hint") or ""),
        )
    return RunReport()  # intent or unknown: no outcome yet


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def first_line(code: str, chars: int = 60) -> str:
    """The code's first line that says something, cut to fit a list column."""
    lines = [line.strip() for line in code.splitlines() if line.strip()]
    return Truncator(lines[0]).chars(chars) if lines else ""


class StoppedByFilter(admin.SimpleListFilter):
    """Failed runs by what stopped them: a limit (the error's raw.limit) or an exception."""

    title = "stopped by"
    parameter_name = "stopped_by"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(EXCEPTION, "an exception"), *((limit, limit) for limit in LIMITS)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[LedgerEntry]) -> QuerySet[LedgerEntry]:
        value = self.value()
        if value is None:
            return queryset
        failed = queryset.filter(state=LedgerState.FAILED)
        if value == EXCEPTION:
            return failed.filter(error__raw__has_key="traceback")
        return failed.filter(error__raw__limit=value)


@admin.register(CodeRun)
class CodeRunAdmin(LedgerAdminBase):
    """The runs of every tenant (for scoped staff, of theirs), newest first; each run's page
    shows the run whole: code, result or stop reason, inner calls and inner writes."""

    list_display = ("created_at", "tenant", "agent_name", "task_id", "call_id", "state", "inner_calls",
                    "limit_hit", "code_line")
    list_display_links = ("created_at", "code_line")
    list_filter = ("state", StoppedByFilter, ("tenant", admin.RelatedFieldListFilter), AgeFilter)
    ordering = ("-created_at",)
    readonly_fields = ("state", "tenant", "agent", "tool_version", "task_id", "call_id", "subject",
                       "created_at", "settled_at", "entry_link", "invocations_link", "code", "result_value",
                       "stdout", "calls_made", "stopped_by", "stop_kind", "stop_message", "stop_hint",
                       "traceback", "not_finished", "error_json")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> _FieldsetSpec:
        """The run, its code, then how it ended: its result, what stopped it, or nothing yet."""
        run = ("state", "tenant", "agent", "tool_version", "task_id", "call_id", "subject", "created_at",
               "settled_at", "entry_link", "invocations_link")
        fieldsets: _FieldsetSpec = [(None, {"fields": run}), ("Code", {"fields": ("code",)})]
        state = obj.state if obj is not None else None
        if state == LedgerState.COMMITTED:
            return [*fieldsets, ("Result", {"fields": ("result_value", "stdout", "calls_made")})]
        if state == LedgerState.FAILED:
            stop: tuple[str, ...] = ("stopped_by", "stop_kind", "stop_message", "stop_hint", "stdout",
                                     "calls_made")
            if run_report(obj).traceback:
                stop = (*stop, "traceback")
            return [*fieldsets, ("Why it stopped", {"fields": stop}),
                    ("Stored error envelope", {"fields": ("error_json",), "classes": ("collapse",)})]
        return [*fieldsets, ("Result", {"fields": ("not_finished",)})]

    def get_queryset(self, request: HttpRequest) -> QuerySet[LedgerEntry]:
        return restrict_to_scope(code_runs().select_related(*self.list_select_related), admin_scope(request),
                                 tenant_path="tenant")

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # An entry that is not a run is "not found" here, as another tenant's run is.
        try:
            return self.get_queryset(request).get(pk=object_id)
        except (CodeRun.DoesNotExist, ValidationError, ValueError):
            return None

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        title = "Code runs: run_python calls, newest first"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False,
                           change: bool = False, form_url: str = "", obj: Any = None) -> HttpResponse:
        if obj is not None:
            context.update(self._calls_context(request, obj))
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url,
                                          obj=obj)

    def _calls_context(self, request: HttpRequest, run: LedgerEntry) -> dict[str, Any]:
        """The tables of inner calls and inner writes, each row linking to its own page."""
        found = code_run_calls(run=run)
        entry_urls = {
            entry.pk: _change_url(request, "ledger", "ledgerentry", entry.pk) for entry in found.inner_entries
        }
        return {
            "inner_calls": [_inner_call_row(request, call, entry_urls) for call in found.invocations],
            "inner_entries": [
                {"entry": entry, "url": entry_urls[entry.pk]} for entry in found.inner_entries
            ],
            "inner_more": found.more,
            "inner_shown": INNER_CALLS_SHOWN,
            "calls_reported": run_report(run).calls,
        }

    @admin.display(description="tool")
    def tool_version(self, obj: LedgerEntry) -> str:
        return f"{obj.tool.name} v{obj.version.number}"

    @admin.display(description="ledger entry")
    def entry_link(self, obj: LedgerEntry) -> str:
        url = reverse("admin:ledger_ledgerentry_change", args=[obj.pk])
        return format_html('<a href="{}">This run\'s own entry, with its timeline</a>', url)

    @admin.display(description="inner calls")
    def inner_calls(self, obj: LedgerEntry) -> str:
        # The run's own count, not the log's rows: it costs no query per row and outlives
        # the invocation log's retention.
        calls = run_report(obj).calls
        return "—" if calls is None else str(calls)

    @admin.display(description="limit hit")
    def limit_hit(self, obj: LedgerEntry) -> str:
        return run_report(obj).limit or "—"

    @admin.display(description="code")
    def code_line(self, obj: LedgerEntry) -> str:
        return format_html("<code>{}</code>", first_line(_code_of(obj)) or "(no code)")

    @admin.display(description="code")
    def code(self, obj: LedgerEntry) -> SafeString:
        return format_html('<pre id="run-code">{}</pre>', _code_of(obj))

    @admin.display(description="result")
    def result_value(self, obj: LedgerEntry) -> SafeString:
        return pretty_json(run_report(obj).result)

    @admin.display(description="stdout")
    def stdout(self, obj: LedgerEntry) -> str:
        printed = run_report(obj).stdout
        return format_html('<pre id="run-stdout">{}</pre>', printed) if printed else "(nothing printed)"

    @admin.display(description="tool calls made")
    def calls_made(self, obj: LedgerEntry) -> str:
        calls = run_report(obj).calls
        return "not said" if calls is None else str(calls)

    @admin.display(description="stopped by")
    def stopped_by(self, obj: LedgerEntry) -> str:
        report = run_report(obj)
        if report.limit:
            return format_html('the limit <strong id="run-limit">{}</strong>', report.limit)
        if report.traceback:
            return "an exception raised by the code (its traceback is below)"
        return "ToolHub, before or around the code (see the message)"

    @admin.display(description="error kind")
    def stop_kind(self, obj: LedgerEntry) -> str:
        return run_report(obj).kind or "—"

    @admin.display(description="message (as the model read it)")
    def stop_message(self, obj: LedgerEntry) -> str:
        return run_report(obj).message or "—"

    @admin.display(description="hint (as the model read it)")
    def stop_hint(self, obj: LedgerEntry) -> str:
        return run_report(obj).hint or "—"

    @admin.display(description="traceback")
    def traceback(self, obj: LedgerEntry) -> SafeString:
        return format_html('<pre id="run-traceback">{}</pre>', run_report(obj).traceback)

    @admin.display(description="outcome")
    def not_finished(self, obj: LedgerEntry) -> str:
        if obj.state == LedgerState.UNKNOWN:
            return ("Unknown: the worker running the code stopped before it answered. The run itself "
                    "changed nothing outside; the writes it made are in their own entries below.")
        return "Not finished yet: the run is waiting for a worker or running."


def _code_of(run: LedgerEntry) -> str:
    code = run.arguments.get("code") if isinstance(run.arguments, dict) else None
    return code if isinstance(code, str) else json.dumps(run.arguments, ensure_ascii=False)


def _change_url(request: HttpRequest, app: str, model: str, pk: Any) -> str:
    """The admin page of a row, if the user may view that model's rows and it has an admin."""
    if not request.user.has_perm(f"{app}.view_{model}"):
        return ""
    try:
        return reverse(f"admin:{app}_{model}_change", args=[pk])
    except NoReverseMatch:
        return ""


def _inner_call_row(request: HttpRequest, call: Invocation, entry_urls: dict[Any, str]) -> dict[str, Any]:
    envelope = call.envelope if isinstance(call.envelope, dict) else {}
    if call.status == "error":
        summary = f"{envelope.get('kind', call.kind)}: {envelope.get('message', '')}"
    else:
        summary = json.dumps(envelope.get("data", envelope.get("raw")), ensure_ascii=False, default=str)
    return {
        "call": call,
        "url": _change_url(request, "audit", "invocation", call.pk),
        "entry_url": entry_urls.get(call.execution_id, ""),
        "summary": Truncator(summary).chars(90),
        "envelope": json.dumps(envelope, indent=2, ensure_ascii=False, default=str),
    }
