"""OpenAPI pieces every app's agent API shares: the error envelope of every non-2xx answer
(contract §2, §3)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from .errors import ERROR_KINDS


# Not an enum: spectacular would extract a "StatusEnum" that collides with the invoke envelope's.
@extend_schema_field({"type": "string", "example": "error", "description": 'Always "error".'})
class _ErrorStatusField(serializers.CharField):
    pass


@extend_schema_serializer(component_name="ErrorEnvelopeDetail")
class ErrorDetailSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="JSON pointer of the offending field, e.g. /ttl_s.")
    problem = serializers.CharField()


@extend_schema_serializer(component_name="ErrorEnvelope")
class ErrorEnvelopeSerializer(serializers.Serializer):
    """The error envelope of every non-2xx answer."""

    status = _ErrorStatusField()
    call_id = serializers.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=sorted(ERROR_KINDS))
    recoverable = serializers.BooleanField(help_text="Whether the same request can succeed later.")
    message = serializers.CharField(help_text="What went wrong.")
    hint = serializers.CharField(help_text="What to change before trying again.")
    details = ErrorDetailSerializer(many=True)
    raw = serializers.JSONField(allow_null=True)
