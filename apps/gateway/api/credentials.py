"""Agent API of the upstreams app: end users' own tokens for per-user credentials.

Write-only: the value is never answered, logged or audited; a PUT or DELETE answers 204.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.common.api_schema import ErrorEnvelopeSerializer
from apps.tenancy.authentication import principal_of
from apps.upstreams.models import Credential, value_problem
from apps.upstreams.selectors import credential_get
from apps.upstreams.services import credential_delete_for_subject, credential_set_for_subject

MAX_VALUE_CHARS = 8192
_PATH_PARAMETERS = [
    OpenApiParameter(
        "name", str, OpenApiParameter.PATH, description="The credential's name, e.g. crm-oauth."
    ),
    OpenApiParameter(
        "subject", str, OpenApiParameter.PATH,
        description="The end user's id in your system: the `subject` of their session tokens.",
    ),
]
_ERRORS = {code: ErrorEnvelopeSerializer for code in (400, 401, 404, 409, 413, 415, 503)}


class _TextField(serializers.CharField):
    """Text only: a token sent as a JSON number would be stored as its Python spelling."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _actor(request: Request) -> str:
    return f"agent:{principal_of(request).agent_id}"


class CredentialSubjectApi(APIView):
    """PUT/DELETE /api/v1/credentials/{name}/subjects/{subject}."""

    @extend_schema_serializer(component_name="CredentialSubjectInput")
    class InputSerializer(serializers.Serializer):
        value = _TextField(
            max_length=MAX_VALUE_CHARS, trim_whitespace=False,
            help_text="The user's own token or key at the upstream (printable ASCII). Never answered.",
        )

        def validate(self, attrs: dict[str, str]) -> dict[str, str]:
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown field; expected value."] for name in unknown}
                )
            return attrs

    def _credential(self, request: Request, name: str) -> Credential:
        credential = credential_get(tenant_id=principal_of(request).tenant_id, name=name)
        if credential is None:
            raise NotFound("This agent's tenant has no credential of that name.")
        return credential

    @extend_schema(
        operation_id="credential_subject_set",
        summary="Register an end user's own token for a per-user credential",
        description=(
            "Called by the agent's backend when a user connects their account at an upstream: "
            "calls made in that user's session (`X-ToolHub-Session` with this `subject`) then "
            "authenticate with this value. Replaces any earlier value. Write-only: the value is "
            "stored encrypted and never answered; the answer is 204 without a body."
        ),
        parameters=_PATH_PARAMETERS,
        request=InputSerializer,
        responses={204: None, **_ERRORS},
        examples=[
            OpenApiExample("A user's token", value={"value": "ya29.a0Af-user-token"}, request_only=True)
        ],
        tags=["credentials"],
    )
    def put(self, request: Request, name: str, subject: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        credential = self._credential(request, name)
        value = serializer.validated_data["value"]
        if not credential.per_subject:
            raise serializers.ValidationError({"name": [
                "This credential is not per end user: it has one value, set by an operator."
            ]})
        if problem := value_problem(value, kind=credential.kind):
            raise serializers.ValidationError({"value": [problem]})
        credential_set_for_subject(credential=credential, subject=subject, value=value, actor=_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="credential_subject_delete",
        summary="Forget an end user's own token",
        description=(
            "Called when a user disconnects their account: their calls then answer `forbidden` "
            "until a new value is registered. Answers 204 whether or not a value was stored."
        ),
        parameters=_PATH_PARAMETERS,
        request=None,
        responses={204: None, **{code: ErrorEnvelopeSerializer for code in (401, 404, 503)}},
        tags=["credentials"],
    )
    def delete(self, request: Request, name: str, subject: str) -> Response:
        credential = self._credential(request, name)
        credential_delete_for_subject(credential=credential, subject=subject, actor=_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
