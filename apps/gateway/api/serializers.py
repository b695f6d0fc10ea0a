"""Input and output serializers of the agent API. They parse and document; no logic."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.common.errors import ERROR_KINDS

MAX_CALLS_PER_BATCH = 64


class ArgumentsField(serializers.JSONField):
    """A call's arguments as the body held them, judged call by call by the parse stage.

    JSONField's own check (json.dumps) would refuse the whole request for one call's 1e400,
    null or integer too long to convert; parse refuses that call alone, saying where.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        return data


class CallSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200, help_text="The model's call id; echoed as call_id.")
    name = serializers.CharField(max_length=200, help_text="The tool name the model chose.")
    arguments = ArgumentsField(
        required=False,
        default="{}",
        help_text="The model's arguments: its JSON text as a string (an object is accepted too).",
    )


class TaskScopeSerializer(serializers.Serializer):
    """Where the calls of a request belong: the task, and the toolset and phase in force."""

    task_id = serializers.CharField(
        max_length=200, help_text="The agent's task (conversation); scopes idempotency, loops and budgets."
    )
    toolset = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    phase = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")


class _CommonInput(TaskScopeSerializer):
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="Stop after validation and say what would run."
    )


class InvokeInputSerializer(_CommonInput):
    call = CallSerializer()
    wait_s = serializers.FloatField(
        required=False,
        default=0,
        min_value=0,
        max_value=60,
        help_text="How long to wait for an accepted (async) call before answering.",
    )


class BatchInputSerializer(_CommonInput):
    # many=True hands max_length to the ListSerializer; the stubs' __init__ leaves it out.
    calls = CallSerializer(many=True, allow_empty=False, max_length=MAX_CALLS_PER_BATCH)  # type: ignore[call-arg]
    budget_chars = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=500,
        max_value=1_000_000,
        help_text="Characters shared by all results; larger results are truncated more, none dropped.",
    )

    def validate_calls(self, calls: list[dict]) -> list[dict]:
        ids = [c["id"] for c in calls]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise serializers.ValidationError(
                f"call ids must be unique in a batch; repeated: {', '.join(duplicates)}"
            )
        return calls


class ErrorDetailSerializer(serializers.Serializer):
    """One problem at one place; the fields after `problem` say the fix as data (contract §3),
    each present only when it applies: never null."""

    path = serializers.CharField(help_text="JSON pointer into the arguments.")
    problem = serializers.CharField()
    allowed = serializers.ListField(
        child=serializers.JSONField(), required=False,
        help_text="The allowed values, the closest to the value sent first.",
    )
    minimum = serializers.FloatField(required=False, help_text="The least number allowed.")
    maximum = serializers.FloatField(required=False, help_text="The greatest number allowed.")
    minLength = serializers.IntegerField(required=False, help_text="The fewest characters allowed.")
    maxLength = serializers.IntegerField(required=False, help_text="The most characters allowed.")
    minItems = serializers.IntegerField(required=False, help_text="The fewest items allowed.")
    maxItems = serializers.IntegerField(required=False, help_text="The most items allowed.")
    format = serializers.CharField(required=False, help_text="The JSON Schema format the value must have.")
    pattern = serializers.CharField(required=False, help_text="The regular expression the value must match.")
    expected_type = serializers.JSONField(
        required=False, help_text="The JSON Schema type expected, or a list of them."
    )
    missing = serializers.CharField(required=False, help_text="JSON pointer of a required field not sent.")
    unexpected = serializers.CharField(required=False, help_text="JSON pointer of a field to leave out.")
    default = serializers.JSONField(required=False, help_text="missing: the field's default.")
    example = serializers.JSONField(
        required=False, help_text="A value the field accepts, checked against its schema."
    )
    swap = serializers.ListField(
        child=serializers.CharField(), min_length=2, max_length=2, required=False,
        help_text="The JSON pointers of two fields whose values to exchange.",
    )
    split = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()), required=False,
        help_text="Ranges to call one by one instead, each keyed by JSON pointer; at most 100.",
    )


class ToolPlaceSerializer(serializers.Serializer):
    toolset = serializers.CharField()
    phase = serializers.CharField(allow_null=True, help_text="null: anywhere in the toolset.")


class TruncatedSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    shown = serializers.IntegerField()
    note = serializers.CharField()


class EnvelopeSerializer(serializers.Serializer):
    """What the model reads (contract §3). Fields present depend on `status`."""

    status = serializers.ChoiceField(choices=["ok", "empty", "error", "accepted", "pending_approval"])
    call_id = serializers.CharField(allow_null=True)
    tool = serializers.CharField(required=False)
    version = serializers.IntegerField(required=False, help_text="ok, empty: the tool version number.")
    # The metaclass takes declared fields out of the class, so `.data` stays the property;
    # the stubs cannot know.
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="ok: the (possibly truncated) result."
    )
    cached = serializers.BooleanField(
        required=False, help_text="ok, error: replayed from a settled ledger entry."
    )
    truncated = TruncatedSerializer(required=False, allow_null=True)
    execution_id = serializers.CharField(required=False, allow_null=True)
    dry_run = serializers.BooleanField(required=False)
    meaning = serializers.CharField(required=False, help_text="empty: what an empty result means.")
    raw = serializers.JSONField(required=False, allow_null=True)
    kind = serializers.ChoiceField(choices=sorted(ERROR_KINDS), required=False)
    recoverable = serializers.BooleanField(
        required=False, help_text="error: whether a changed call can succeed."
    )
    message = serializers.CharField(required=False)
    hint = serializers.CharField(required=False, help_text="error: what to do next.")
    details = ErrorDetailSerializer(many=True, required=False)
    retry_after_s = serializers.FloatField(
        required=False, help_text="rate_limited, in_progress: seconds to wait before calling again."
    )
    suggestions = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="unknown_tool: the closest visible tools."
    )
    available_in = ToolPlaceSerializer(
        many=True,
        required=False,
        help_text="unknown_tool: the toolsets and phases (that this agent sees) where the tool is.",
    )
    error_id = serializers.CharField(required=False, help_text="internal: the id in the server logs.")
    request_id = serializers.CharField(
        required=False, allow_null=True, help_text="internal: the request's X-Request-ID, also in the logs."
    )
    poll = serializers.CharField(required=False, help_text="accepted, pending_approval: where to poll.")


class BatchOutputSerializer(serializers.Serializer):
    results = EnvelopeSerializer(many=True)
