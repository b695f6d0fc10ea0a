"""What `upstream_for_call` raises when a tool cannot reach its upstream. They are ToolHub
errors already, with what the model may read: never the upstream's address, the credential's
value, or anything of another tenant."""

from __future__ import annotations

from apps.common.errors import BusinessRuleError, ForbiddenError, UnavailableError


class UpstreamNotFound(UnavailableError):
    """The tool's tenant has no upstream of this name (nor does the platform): the tool cannot
    run, and nothing was sent."""

    def __init__(self, name: str) -> None:
        super().__init__(
            "This tool's upstream system is not configured, so the tool cannot run; nothing was sent.",
            hint="Do not retry: an operator must configure the tool's upstream. Tell the user the "
            "action is unavailable for now.",
        )
        self.name = name


class CredentialUnreadable(UpstreamNotFound):
    """The upstream's credential cannot be decrypted with the configured keys (a key was
    removed from TOOLHUB_ENCRYPTION_KEYS before `rotate_credentials` ran): nothing is sent."""

    def __init__(self, name: str, credential_name: str) -> None:
        super().__init__(name)
        self.credential_name = credential_name


class SubjectCredentialMissing(ForbiddenError):
    """The upstream acts as each end user with their own token, and this session's user has
    registered none (or the call has no session)."""

    def __init__(self, credential_name: str) -> None:
        super().__init__(
            "This tool acts as the user at an external service, and the user has not connected "
            "their account there.",
            hint="Do not retry: ask the user to connect their account (the application registers "
            "the user's token with ToolHub), then call again in their session.",
        )
        self.credential_name = credential_name


class SubjectsFull(BusinessRuleError):
    """A per-user credential already holds the most end users' tokens a credential may hold
    (TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL): each user's token is a session of its own at the
    upstream, so an agent registering fresh subjects could otherwise grow them without bound."""

    http_status = 409

    def __init__(self, credential_name: str, limit: int) -> None:
        super().__init__(
            f"Credential {credential_name} already holds the tokens of {limit} end users, the most "
            "one credential may hold; this user's token was not stored.",
            hint="Remove the tokens of users who disconnected (DELETE "
            f"/api/v1/credentials/{credential_name}/subjects/{{subject}}), or ask an operator to raise "
            "TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL. Replacing a registered user's token is still allowed.",
        )
