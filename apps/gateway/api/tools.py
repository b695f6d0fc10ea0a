"""GET /api/v1/tools: the tools this agent may call now, in its model vendor's format."""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.catalog.exports import CHARS_PER_TOKEN, FORMATS
from apps.gateway.tool_exports import agent_tool_export
from apps.tenancy.authentication import principal_of

from .serializers import EnvelopeSerializer
from .views import ALWAYS_ERRORS

TOKEN_ESTIMATE_HEADER = "X-ToolHub-Token-Estimate"
_ALLOWED = ", ".join(FORMATS)


class _JsonOnly(BaseContentNegotiation):
    """Always JSON. DRF would read the `format` query parameter (the contract's export format)
    as the name of a renderer and answer 404."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> None:
        return None

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class ToolListApi(APIView):
    content_negotiation_class = _JsonOnly

    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(
            choices=FORMATS,
            default="toolhub",
            error_messages={"invalid_choice": f'"{{input}}" is not a format; use one of {_ALLOWED}.'},
        )
        toolset = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
        phase = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    @extend_schema_serializer(component_name="ToolList")
    class OutputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=FORMATS)
        tools = serializers.ListField(
            child=serializers.JSONField(),
            help_text="Exactly what the vendor's API takes as its tools list (toolhub: ToolHub's listing "
            "with version, side_effect and token_estimate per tool).",
        )
        token_estimate = serializers.IntegerField(
            help_text=f"Approximate tokens of all tools: characters of compact JSON / {CHARS_PER_TOKEN}."
        )
        tool_token_estimates = serializers.DictField(
            child=serializers.IntegerField(), help_text="The same estimate per tool, by tool name."
        )
        code_run_estimates = serializers.DictField(
            child=serializers.DictField(child=serializers.IntegerField()),
            help_text="Per code-run tool (run_python), by name: `token_estimate`, its own estimate (its "
            "description lists the tools its code may call as Python signatures), beside "
            "`tools_token_estimate`, the estimate of listing those `tools` one by one in this format.",
        )

    @extend_schema(
        operation_id="tool_list",
        summary="The tools this agent may call now, exported for its model",
        description="Granted tools at their latest published (or pinned) version, narrowed to the toolset "
        "and phase when given, with context-bound fields removed from the schemas, plus "
        "request_capability (always last). Each vendor format fits that vendor's strict subset; a "
        "constraint a format cannot carry is written into the description, and the gateway always "
        "validates calls against the full schema. The total token estimate is also in the "
        f"{TOKEN_ESTIMATE_HEADER} header.",
        parameters=[
            OpenApiParameter("format", OpenApiTypes.STR, enum=list(FORMATS), default="toolhub"),
            OpenApiParameter("toolset", OpenApiTypes.STR, description="Only this toolset's tools."),
            OpenApiParameter("phase", OpenApiTypes.STR, description="Only this phase of the toolset."),
        ],
        responses={
            200: OutputSerializer,
            400: OpenApiResponse(EnvelopeSerializer, description="Unknown format, toolset or phase."),
            **ALWAYS_ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        principal = principal_of(request)
        export = agent_tool_export(
            tenant_id=principal.tenant_id,
            agent_id=principal.agent_id,
            fmt=data["format"],
            toolset=data["toolset"] or None,
            phase=data["phase"] or None,
        )
        body = {
            "format": export.format,
            "tools": export.tools,
            "token_estimate": export.token_estimate,
            "tool_token_estimates": export.token_estimates,
            "code_run_estimates": export.code_runs,
        }
        return Response(body, headers={TOKEN_ESTIMATE_HEADER: str(export.token_estimate)})
