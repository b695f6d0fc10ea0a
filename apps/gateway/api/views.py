"""The agent API: invoke one call, invoke a model turn's calls, follow an execution."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.gateway.contracts import ToolCall
from apps.gateway.replies import execution_envelope
from apps.gateway.services import InvokeOptions, invoke_calls, invoke_one
from apps.ledger.selectors import ledger_entry_get
from apps.tenancy.authentication import AgentPrincipal, principal_of
from apps.tenancy.sessions import SESSION_HEADER

from . import lean
from .serializers import (
    BatchInputSerializer,
    BatchOutputSerializer,
    EnvelopeSerializer,
    InvokeInputSerializer,
)

# Error answers every agent API operation can give (apps/common/api.py), each an envelope.
ALWAYS_ERRORS = {
    401: OpenApiResponse(EnvelopeSerializer, description="Missing, unknown or revoked agent key."),
    503: OpenApiResponse(EnvelopeSerializer, description="Database or broker down: nothing ran."),
}
BODY_ERRORS = {
    400: OpenApiResponse(EnvelopeSerializer, description="Malformed request envelope."),
    413: OpenApiResponse(EnvelopeSerializer, description="Body over the size limit."),
    415: OpenApiResponse(EnvelopeSerializer, description="Body not sent as application/json."),
    **ALWAYS_ERRORS,
}
_ERRORS = {
    **BODY_ERRORS,
    429: OpenApiResponse(EnvelopeSerializer, description="The agent's own request rate."),
}


SESSION_PARAMETER = OpenApiParameter(
    name="X-ToolHub-Session",
    location=OpenApiParameter.HEADER,
    required=False,
    description="The end user's session token from POST /api/v1/sessions. Tools that act for a user "
    "take its identity from here, never from arguments.",
)


def _options(data: dict[str, Any]) -> InvokeOptions:
    return InvokeOptions(
        task_id=data["task_id"],
        toolset=data["toolset"] or None,
        phase=data["phase"] or None,
        dry_run=data["dry_run"],
        wait_s=data.get("wait_s", 0),
    )


def _call(data: dict[str, Any]) -> ToolCall:
    return ToolCall(call_id=data["id"], name=data["name"], arguments=data["arguments"])


def _status(envelope: dict[str, Any]) -> int:
    return 202 if envelope["status"] == "accepted" else 200


def _invoke(principal: AgentPrincipal, session_token: str | None, body: dict[str, Any]) -> tuple[Any, int]:
    envelope = invoke_one(
        principal=principal,
        session_token=session_token,
        options=lean.options(body, wait_s=lean.wait_s(body)),
        call=lean.call(body.get("call")),
    )
    return envelope, _status(envelope)


def _invoke_batch(
    principal: AgentPrincipal, session_token: str | None, body: dict[str, Any]
) -> tuple[Any, int]:
    results = invoke_calls(
        principal=principal,
        session_token=session_token,
        options=lean.options(body),
        calls=lean.calls(body),
        budget_chars=lean.budget_chars(body),
    )
    return {"results": results}, 200


class InvokeApi(APIView):
    """A well-formed request goes the lean way (lean.py); any other is read and refused by
    the serializers, which document the operation."""

    @extend_schema(
        operation_id="invoke",
        summary="One tool call through the whole pipeline",
        description="Every outcome of a well-formed, authenticated request is an envelope with HTTP 200, "
        "tool errors included; 202 when the call was accepted to run asynchronously. The end user's "
        "session token goes in the X-ToolHub-Session header.",
        request=InvokeInputSerializer,
        parameters=[SESSION_PARAMETER],
        responses={200: EnvelopeSerializer, 202: EnvelopeSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        serializer = InvokeInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        envelope = invoke_one(
            principal=principal_of(request),
            session_token=request.META.get(SESSION_HEADER),
            options=_options(data),
            call=_call(data["call"]),
        )
        return Response(envelope, status=_status(envelope))

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        answer = lean.served(request, _invoke, allow=", ".join(self.allowed_methods))
        return answer if answer is not None else super().dispatch(request, *args, **kwargs)


class InvokeBatchApi(APIView):
    """As InvokeApi: lean for a well-formed request, the serializers for any other."""

    @extend_schema(
        operation_id="invoke_batch",
        summary="The tool calls of one model turn",
        description="Results come back in the calls' order with call ids matched. Readonly and "
        "recomputable calls run concurrently, writes one at a time in order.",
        request=BatchInputSerializer,
        parameters=[SESSION_PARAMETER],
        responses={200: BatchOutputSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        serializer = BatchInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        results = invoke_calls(
            principal=principal_of(request),
            session_token=request.META.get(SESSION_HEADER),
            options=_options(data),
            calls=[_call(c) for c in data["calls"]],
            budget_chars=data["budget_chars"],
        )
        return Response({"results": results})

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        answer = lean.served(request, _invoke_batch, allow=", ".join(self.allowed_methods))
        return answer if answer is not None else super().dispatch(request, *args, **kwargs)


class ExecutionDetailApi(APIView):
    @extend_schema(
        operation_id="execution_detail",
        summary="The envelope of an accepted or uncertain execution, final or not",
        responses={
            200: EnvelopeSerializer,
            404: OpenApiResponse(EnvelopeSerializer, description="No such execution."),
            **ALWAYS_ERRORS,
        },
    )
    def get(self, request: Request, execution_id: UUID) -> Response:
        entry = ledger_entry_get(tenant_id=principal_of(request).tenant_id, pk=execution_id)
        if entry is None:
            raise NotFound("No execution with this id exists for this agent's tenant.")
        return Response(execution_envelope(entry=entry))
