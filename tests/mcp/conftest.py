import pytest

from apps.tenancy.services import agent_key_issue
from tests.agent_tools import agent, api, demo_tools, publish_tool, session_for  # noqa: F401


@pytest.fixture
def key(agent):  # noqa: F811
    """The agent's key, as the MCP client sends it."""
    return agent_key_issue(agent=agent).secret
