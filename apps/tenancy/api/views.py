"""Agent API of the tenancy app: minting end-user session tokens."""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.common.api_schema import ErrorEnvelopeSerializer
from apps.common.jsontext import MAX_EXACT_INTEGER, first_hazard
from apps.tenancy.authentication import principal_of
from apps.tenancy.services import session_mint

DEFAULT_TTL_S = 900
# Tokens travel in a header; servers and proxies refuse headers much past 8 KB.
MAX_ATTRIBUTES_CHARS = 4096
_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


class SessionCreateApi(APIView):
    """POST /api/v1/sessions: a signed token saying who the end user is, for this agent only."""

    @extend_schema_serializer(component_name="SessionCreateInput")
    class InputSerializer(serializers.Serializer):
        subject = serializers.CharField(
            max_length=200, help_text="The end user's id in your system, e.g. a customer id."
        )
        attributes = serializers.DictField(
            required=False, default=dict,
            help_text="Facts about the user that tool bindings may use as session.attributes.<name>; "
            "names are letters, digits and '_'.",
        )
        ttl_s = serializers.IntegerField(
            required=False, min_value=1,
            help_text=f"Lifetime in seconds, default {DEFAULT_TTL_S}, at most "
            "TOOLHUB_SESSION_MAX_TTL_S (86400 unless configured).",
        )

        def validate_ttl_s(self, value: int) -> int:
            # Read at request time so the operator's setting, not import time, decides.
            limit = settings.TOOLHUB_SESSION_MAX_TTL_S
            if value > limit:
                raise serializers.ValidationError(
                    f"Ensure this value is less than or equal to {limit} (seconds)."
                )
            return value

        def validate_attributes(self, value: dict[str, Any]) -> dict[str, Any]:
            bad = sorted(name for name in value if not _ATTRIBUTE_NAME.match(name))
            if bad:
                raise serializers.ValidationError(
                    f"Attribute names may only use letters, digits and '_': {', '.join(bad)}."
                )
            if hazard := first_hazard(value):
                # Tools may bind and store attributes: they must hash, store and echo as arguments do.
                raise serializers.ValidationError(
                    f"Attribute {'.'.join(map(str, hazard.path))}: {hazard.problem}. Attributes take "
                    f"text without NUL or lone surrogates, integers up to {MAX_EXACT_INTEGER} (longer "
                    "ones as text) and finite numbers."
                )
            if len(json.dumps(value, separators=(",", ":"))) > MAX_ATTRIBUTES_CHARS:
                raise serializers.ValidationError(
                    f"Attributes are longer than {MAX_ATTRIBUTES_CHARS} characters as JSON; "
                    "keep only what tool bindings need."
                )
            return value

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown field; expected subject, attributes, ttl_s."] for name in unknown}
                )
            attrs.setdefault("ttl_s", min(DEFAULT_TTL_S, settings.TOOLHUB_SESSION_MAX_TTL_S))
            return attrs

    @extend_schema_serializer(component_name="SessionCreateOutput")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="Send it as the X-ToolHub-Session header.")
        expires_at = serializers.DateTimeField(help_text="ISO 8601, UTC.")

    @extend_schema(
        operation_id="sessions_create",
        summary="Mint a session token for an end user",
        description=(
            "Called by the agent's backend, never by the model: binds an end user (`subject`) to "
            "this agent for `ttl_s` seconds. Send the token as `X-ToolHub-Session` on invoke "
            "calls; tools take the user's identity from it, never from their arguments. A token "
            "works only with the agent key that minted it."
        ),
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            **{status: ErrorEnvelopeSerializer for status in (400, 401, 413, 415, 503)},
        },
        examples=[
            OpenApiExample(
                "A customer of the shop",
                value={"subject": "u-1001", "attributes": {"plan": "pro"}, "ttl_s": 900},
                request_only=True,
            ),
            OpenApiExample(
                "ttl_s out of range",
                status_codes=["400"],
                response_only=True,
                value={
                    "status": "error", "call_id": None, "kind": "invalid_args", "recoverable": True,
                    "message": "The request envelope is malformed.",
                    "hint": "Fix the fields listed in details; the API reference is at /api/docs/.",
                    "details": [{"path": "/ttl_s",
                                 "problem": "Ensure this value is less than or equal to 86400 (seconds)."}],
                    "raw": None,
                },
            ),
        ],
        tags=["sessions"],
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        principal = principal_of(request)
        token, expires_at = session_mint(
            tenant_id=principal.tenant_id,
            agent_id=principal.agent_id,
            **serializer.validated_data,
        )
        output = self.OutputSerializer({"token": token, "expires_at": expires_at})
        return Response(output.data, status=status.HTTP_201_CREATED)
