from tests.agent_tools import agent, api, demo_tools, publish_tool, session_for  # noqa: F401
