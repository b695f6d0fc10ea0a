"""The gateway's fixtures (an agent with a key, published test tools, sessions), shared."""

from tests.gateway.conftest import _reset_runs, agent, api, publish_tool, session_for  # noqa: F401
