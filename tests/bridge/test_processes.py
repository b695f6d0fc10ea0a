"""The bridge's processes: one per tenant and end user, stopped when idle, started again
with backoff after dying, their stderr in the log without the credential; and what the
bridge refuses (a wrong token, a bad path or launch spec)."""

from __future__ import annotations

import base64
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from apps.common.logs import REDACTED
from apps.upstreams.bridge import LAUNCH_HEADER, NOT_RUNNING, PROCESS_STOPPED

from .conftest import call, eventually, headers_for, hostile_launcher, structured, url_for


def test_each_tenant_and_end_user_gets_a_process_and_scratch_directory_of_its_own(mcp_bridge):
    # Given one launcher used by two tenants, and by an end user of the first
    headers = headers_for(hostile_launcher())
    addresses = [
        url_for(upstream_id=200, tenant_id=1),
        url_for(upstream_id=200, tenant_id=2),
        url_for(upstream_id=200, tenant_id=1, subject="alice@example.com"),
        url_for(upstream_id=200, tenant_id=None),
    ]

    # When each asks who serves it, twice (all at once)
    def whoami(url: str) -> dict:
        return structured(url, headers, "whoami")

    with ThreadPoolExecutor() as pool:
        seen = list(pool.map(whoami, addresses))
        again = [answer["instance"] for answer in pool.map(whoami, addresses)]

    # Then each has its own process, kept between calls, with only its own mark in its HOME
    instances = [answer["instance"] for answer in seen]
    assert len(set(instances)) == len(addresses)
    assert again == instances
    for answer in seen:
        assert answer["home_files"] == [f"instance-{answer['instance']}"]
        assert answer["cwd"] == answer["home"]
    scratch = {path.name for path in mcp_bridge.scratch.iterdir() if path.name.startswith("u200-")}
    assert len(scratch) == len(addresses)
    assert all(len(path) < 60 and "alice" not in path for path in scratch)


def test_a_process_idle_for_its_idle_stop_is_stopped_and_its_scratch_deleted(mcp_bridge):
    headers = headers_for(hostile_launcher(idle_stop_s=1))
    url = url_for(upstream_id=201, tenant_id=1)
    first = structured(url, headers, "whoami")["instance"]
    scratch = [path for path in mcp_bridge.scratch.iterdir() if path.name.startswith("u201-")]
    assert len(scratch) == 1

    def stopped() -> None:
        assert not scratch[0].exists()
        assert "u201-1---" in mcp_bridge.log_text().split("idle for 1 s, stopped")[-2][-200:]

    eventually(stopped, timeout_s=5)

    assert structured(url, headers, "whoami")["instance"] != first


def test_a_process_that_dies_is_started_again_after_a_backoff(mcp_bridge):
    # Given a running process
    headers = headers_for(hostile_launcher())
    url = url_for(upstream_id=202, tenant_id=1)
    first = structured(url, headers, "whoami")["instance"]

    # When it dies during a call
    died = call(url, headers, "crash")

    # Then that call fails as "it may have run", the next at once as "not running, retry later"
    assert isinstance(died, MCPError) and died.error.data == {"reason": PROCESS_STOPPED}
    refused = call(url, headers, "whoami")
    assert isinstance(refused, MCPError), refused
    assert refused.error.code == INVALID_REQUEST
    assert refused.error.data["reason"] == NOT_RUNNING
    assert "calling again after that may work" in refused.error.message.lower()
    # ... and once the backoff is over, a new process answers
    started = time.monotonic()
    assert eventually(lambda: structured(url, headers, "whoami"))["instance"] != first
    assert time.monotonic() - started < 5


def test_a_process_that_cannot_start_is_refused_with_a_retry_hint(mcp_bridge):
    headers = headers_for(hostile_launcher(read_paths=["/nonexistent/hostile_server.py"]))

    refused = call(url_for(upstream_id=203, tenant_id=1), headers, "whoami")

    assert isinstance(refused, MCPError), refused
    assert refused.error.code == INVALID_REQUEST
    assert refused.error.data["reason"] == NOT_RUNNING
    assert "could not be started" in refused.error.message


def test_stderr_goes_to_the_log_without_the_credential(mcp_bridge):
    credential = "cred-" + uuid.uuid4().hex
    words = "hello-stderr-" + uuid.uuid4().hex
    headers = headers_for(hostile_launcher(), env_name="HOSTILE_TOKEN", credential=credential)

    assert structured(url_for(upstream_id=204, tenant_id=1), headers, "shout", {"words": words})

    def logged() -> None:
        assert f"{words} token={REDACTED}" in mcp_bridge.log_text()

    eventually(logged, timeout_s=5)
    assert credential not in mcp_bridge.log_text()


def test_answers_and_errors_pass_through_unchanged(mcp_bridge):
    headers = headers_for(hostile_launcher())
    url = url_for(upstream_id=205, tenant_id=1)

    assert structured(url, headers, "structured", {"count": 3}) == {"count": 3, "items": [0, 1, 2]}
    refused = call(url, headers, "refuse", {"why": "no stock"})
    assert refused.is_error and refused.content[0].text.endswith("refused: no stock")
    error = call(url, headers, "protocol_error", {"why": "shape"})
    assert isinstance(error, MCPError), error
    assert (error.error.code, error.error.message) == (-32602, "bad params: shape")
    assert error.error.data == {"field": "why"}


def test_a_wrong_or_missing_token_is_401_and_starts_nothing(mcp_bridge):
    headers = headers_for(hostile_launcher())
    url = url_for(upstream_id=206, tenant_id=1)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    for authorization in ("Bearer wrong", "", headers["Authorization"] + "x"):
        answer = httpx.post(url, json=body, headers={**headers, "Authorization": authorization}, timeout=10)
        assert answer.status_code == 401

    assert not any(path.name.startswith("u206-") for path in mcp_bridge.scratch.iterdir())


def test_a_bad_path_or_launch_spec_is_400_with_a_message(mcp_bridge):
    headers = headers_for(hostile_launcher())
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    not_a_spec = base64.urlsafe_b64encode(b'{"command": ["relative"]}').decode()

    bad_path = httpx.post(f"{mcp_bridge.url}/upstreams/x/1/-/mcp", json=body, headers=headers, timeout=10)
    bad_spec = httpx.post(url_for(upstream_id=207), json=body, headers={**headers, LAUNCH_HEADER: not_a_spec},
                          timeout=10)
    no_spec = httpx.post(url_for(upstream_id=207), json=body,
                         headers={"Authorization": headers["Authorization"]}, timeout=10)

    assert bad_path.status_code == bad_spec.status_code == no_spec.status_code == 400
    assert "/upstreams/" in bad_path.json()["message"]
    assert "command" in bad_spec.json()["message"]
    assert no_spec.json()["error"] == "bad_launch_spec"


def test_requests_arriving_together_share_one_start(mcp_bridge):
    headers = headers_for(hostile_launcher())
    url = url_for(upstream_id=208, tenant_id=1)

    with ThreadPoolExecutor(max_workers=4) as pool:
        seen = list(pool.map(lambda _: structured(url, headers, "whoami")["instance"], range(4)))

    assert len(set(seen)) == 1
    assert len([path for path in mcp_bridge.scratch.iterdir() if path.name.startswith("u208-")]) == 1
