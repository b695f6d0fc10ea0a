"""Vendor adapters: a model's assistant message in, the messages that answer its tool calls out.

An agent loop appends what these return to its conversation as it is, with no glue code.
Both run the calls as one batch (invoke_calls): reads together, writes one at a time in
order, results in the calls' order with ids matched, and an optional shared budget.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.gateway.contracts import ToolCall
from apps.gateway.replies import envelope_text
from apps.gateway.services import InvokeOptions, invoke_calls
from apps.tenancy.authentication import principal_of
from apps.tenancy.sessions import SESSION_HEADER

from .serializers import MAX_CALLS_PER_BATCH, ArgumentsField, EnvelopeSerializer, TaskScopeSerializer
from .views import BODY_ERRORS, SESSION_PARAMETER

_ERRORS = {
    **BODY_ERRORS,
    400: OpenApiResponse(
        EnvelopeSerializer, description="Malformed request, or a message without tool calls."
    ),
}


def _unique_ids(ids: list[str]) -> None:
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise serializers.ValidationError(f"tool call ids must be unique; repeated: {', '.join(repeated)}")


class _TurnInput(TaskScopeSerializer):
    budget_chars = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=500,
        max_value=1_000_000,
        help_text="Characters shared by all results; larger results are truncated more, none dropped.",
    )


def _run_turn(request: Request, data: dict[str, Any], calls: list[ToolCall]) -> list[dict[str, Any]]:
    return invoke_calls(
        principal=principal_of(request),
        session_token=request.META.get(SESSION_HEADER),
        options=InvokeOptions(
            task_id=data["task_id"], toolset=data["toolset"] or None, phase=data["phase"] or None
        ),
        calls=calls,
        budget_chars=data["budget_chars"],
    )


_NO_TOOL_CALLS = "The message has no tool calls: there is nothing to run."


class OpenAIFunctionSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    arguments = ArgumentsField(help_text="The model's JSON text (an object is accepted too).")


class OpenAIToolCallSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    type = serializers.ChoiceField(choices=["function"], default="function")
    function = OpenAIFunctionSerializer()


class OpenAIMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["assistant"])
    # many=True hands max_length to the ListSerializer; the stubs' __init__ leaves it out.
    tool_calls = OpenAIToolCallSerializer(  # type: ignore[call-arg]
        many=True,
        allow_empty=False,
        max_length=MAX_CALLS_PER_BATCH,
        error_messages={"required": _NO_TOOL_CALLS, "null": _NO_TOOL_CALLS, "empty": _NO_TOOL_CALLS},
    )

    def validate_tool_calls(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _unique_ids([call["id"] for call in value])
        return value


class OpenAIAdapterApi(APIView):
    @extend_schema_serializer(component_name="OpenAIAdapterInput")
    class InputSerializer(_TurnInput):
        message = OpenAIMessageSerializer(help_text="The assistant message from the Chat Completions API.")

    @extend_schema_serializer(component_name="OpenAIAdapterOutput")
    class OutputSerializer(serializers.Serializer):
        messages = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="adapter_openai",
        summary="Run an OpenAI assistant message's tool calls; get the tool messages back",
        description="Body: task_id and the assistant message (with tool_calls) as the Chat Completions "
        "API returned it. Answers one {role: tool, tool_call_id, content} message per call, in the "
        "calls' order; content is the envelope as JSON text. Append them to the conversation as they "
        "are. The end user's session token goes in the X-ToolHub-Session header.",
        request=InputSerializer,
        parameters=[SESSION_PARAMETER],
        responses={200: OutputSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        tool_calls = data["message"]["tool_calls"]
        calls = [
            ToolCall(call_id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
            for c in tool_calls
        ]
        envelopes = _run_turn(request, data, calls)
        messages = [
            {"role": "tool", "tool_call_id": call.call_id, "content": envelope_text(envelope)}
            for call, envelope in zip(calls, envelopes, strict=True)
        ]
        return Response({"messages": messages})


class AnthropicToolUseSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=200)
    input = serializers.DictField(help_text="The tool's input object.")


class AnthropicMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["assistant"])
    content = serializers.ListField(child=serializers.DictField())

    def validate_content(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Text, thinking and server tool blocks are the model's own business: only tool_use
        # blocks are calls for ToolHub.
        blocks = [block for block in value if block.get("type") == "tool_use"]
        if not blocks:
            raise serializers.ValidationError("The message has no tool_use blocks: there is nothing to run.")
        if len(blocks) > MAX_CALLS_PER_BATCH:
            raise serializers.ValidationError(f"At most {MAX_CALLS_PER_BATCH} tool_use blocks per message.")
        uses = AnthropicToolUseSerializer(data=blocks, many=True)
        uses.is_valid(raise_exception=True)
        _unique_ids([use["id"] for use in uses.validated_data])
        return uses.validated_data


class AnthropicAdapterApi(APIView):
    @extend_schema_serializer(component_name="AnthropicAdapterInput")
    class InputSerializer(_TurnInput):
        message = AnthropicMessageSerializer(
            help_text="The assistant message (role and content) from the Messages API, with tool_use blocks."
        )

    @extend_schema_serializer(component_name="AnthropicAdapterOutput")
    class OutputSerializer(serializers.Serializer):
        role = serializers.CharField(help_text='Always "user".')
        content = serializers.ListField(
            child=serializers.DictField(),
            help_text="One tool_result block per tool_use block, in order: tool_use_id, content (the "
            "envelope as JSON text) and is_error (true for error envelopes).",
        )

    @extend_schema(
        operation_id="adapter_anthropic",
        summary="Run an Anthropic assistant message's tool_use blocks; get the user message back",
        description="Body: task_id and the assistant message as the Messages API returned it (role and "
        "content). Answers one user message whose content has a tool_result block per tool_use block, "
        "in order, with is_error set for error envelopes. Append it to the conversation as it is. The "
        "end user's session token goes in the X-ToolHub-Session header.",
        request=InputSerializer,
        parameters=[SESSION_PARAMETER],
        responses={200: OutputSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        calls = [
            ToolCall(call_id=u["id"], name=u["name"], arguments=u["input"])
            for u in data["message"]["content"]
        ]
        envelopes = _run_turn(request, data, calls)
        results = [
            {
                "type": "tool_result",
                "tool_use_id": call.call_id,
                "content": envelope_text(envelope),
                "is_error": envelope["status"] == "error",
            }
            for call, envelope in zip(calls, envelopes, strict=True)
        ]
        return Response({"role": "user", "content": results})
