"""The security tests' agent, key, session and recording tools, reused by the fuzzer."""

from tests.security.conftest import (  # noqa: F401
    _reset_runs,
    agent,
    caller,
    publish_tool,
    recording_tools,
    session_for,
)
