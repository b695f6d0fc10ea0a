"""Agent API of the upstreams app: end users' own tokens for per-user credentials.

Write-only: the value is never answered, logged or audited; a PUT or DELETE answers 204.
Both act for the end user of the agent's session (`X-ToolHub-Session`), who must be the
path's subject, and on the token this agent registered: another agent's is neither
replaced, removed nor sent.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.common.api_schema import ErrorEnvelopeSerializer
from apps.common.errors import ForbiddenError
from apps.tenancy.authentication import principal_of
from apps.tenancy.sessions import SESSION_HEADER, verify_session
from apps.upstreams.models import SUBJECT_MAX_CHARS, Credential, value_problem
from apps.upstreams.selectors import credential_get
from apps.upstreams.services import credential_delete_for_subject, credential_set_for_subject

MAX_VALUE_CHARS = 8192
_PATH_PARAMETERS = [
    OpenApiParameter(
        "name", str, OpenApiParameter.PATH, description="The credential's name, e.g. crm-oauth."
    ),
    OpenApiParameter(
        "subject", str, OpenApiParameter.PATH,
        description="The end user's id in your system: the `subject` of the session token sent.",
    ),
    OpenApiParameter(
        "X-ToolHub-Session", str, OpenApiParameter.HEADER, required=True,
        description="A session token of this end user, minted with this agent's key "
        "(POST /api/v1/sessions): only the user's own session registers or removes their token.",
    ),
]
_ERRORS = {code: ErrorEnvelopeSerializer for code in (400, 401, 403, 404, 413, 415, 503)}
_SESSION_HINT = (
    "This is for the agent's backend: mint a session for this user with POST /api/v1/sessions "
    "(same agent key, subject = the path's subject) and send it as X-ToolHub-Session."
)


class _TextField(serializers.CharField):
    """Text only: a token sent as a JSON number would be stored as its Python spelling."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _actor(request: Request) -> str:
    return f"agent:{principal_of(request).agent_id}"


def _checked_subject(subject: str) -> str:
    """The path's subject, refused (400) when no session could carry it."""
    if len(subject) > SUBJECT_MAX_CHARS:
        problem = f"A subject has at most {SUBJECT_MAX_CHARS} characters; this one has {len(subject)}."
    elif "\x00" in subject:
        problem = "A subject cannot contain NUL (%00)."
    else:
        return subject
    raise serializers.ValidationError({"subject": [f"{problem} Use the subject of the user's sessions."]})


def _require_session_of(request: Request, subject: str) -> None:
    """ForbiddenError (403) unless the request carries this agent's valid session of `subject`."""
    token = request.META.get(SESSION_HEADER, "")
    if not token:
        raise ForbiddenError(
            "Registering or removing an end user's token needs that user's session: this request "
            "has no X-ToolHub-Session. Nothing was changed.", hint=_SESSION_HINT, http_status=403,
        )
    principal = principal_of(request)
    try:
        claims = verify_session(token, tenant_id=principal.tenant_id, agent_id=principal.agent_id,
                                now=timezone.now())
    except ForbiddenError as refused:  # answered in the call's envelope on invoke; here it is the status
        raise ForbiddenError(f"{refused.message} Nothing was changed.", hint=refused.hint,
                             http_status=403) from None
    if claims.subject != subject:
        raise ForbiddenError(
            "The X-ToolHub-Session session is of another end user than the path's subject: a user's "
            "token is registered or removed only in their own session. Nothing was changed.",
            hint=_SESSION_HINT, http_status=403,
        )


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
            "Called by the agent's backend when a user connects their account at an upstream, in "
            "that user's session (`X-ToolHub-Session` with this `subject`, else 403): this agent's "
            "calls in the user's sessions then authenticate with this value (another agent's calls "
            "do not). Replaces the value this agent registered before. Write-only: the value is "
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
        subject = _checked_subject(subject)
        credential = self._credential(request, name)
        value = serializer.validated_data["value"]
        if not credential.per_subject:
            raise serializers.ValidationError({"name": [
                "This credential is not per end user: it has one value, set by an operator."
            ]})
        if problem := value_problem(value, kind=credential.kind):
            raise serializers.ValidationError({"value": [problem]})
        _require_session_of(request, subject)
        credential_set_for_subject(
            credential=credential, agent_id=principal_of(request).agent_id, subject=subject, value=value,
            actor=_actor(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="credential_subject_delete",
        summary="Forget an end user's own token",
        description=(
            "Called when a user disconnects their account, in that user's session (else 403): "
            "this agent's calls for them then answer `forbidden` until a new value is registered; "
            "a value another agent registered stays. Answers 204 whether or not a value was stored."
        ),
        parameters=_PATH_PARAMETERS,
        request=None,
        responses={204: None, **{code: ErrorEnvelopeSerializer for code in (400, 401, 403, 404, 503)}},
        tags=["credentials"],
    )
    def delete(self, request: Request, name: str, subject: str) -> Response:
        subject = _checked_subject(subject)
        credential = self._credential(request, name)
        _require_session_of(request, subject)
        credential_delete_for_subject(
            credential=credential, agent_id=principal_of(request).agent_id, subject=subject,
            actor=_actor(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
