# The ledger is driven through the invoke API, so its tests share the gateway's fixtures.
from tests.gateway.conftest import _reset_runs, agent, api, publish_tool, session_for  # noqa: F401
