"""Structured logs: JSON lines, a request id from end to end, task ids, and no secrets."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from celery import shared_task
from rest_framework.test import APIClient

from apps.common.logs import PlainFormatter, logging_config_from_env
from apps.tenancy.services import agent_key_issue
from tests.ops.conftest import ROOT

task_logger = logging.getLogger("tests.ops.task")


def invoke(api: APIClient, name: str, arguments: dict, *, request_id: str, session: str | None = None):
    headers = {"HTTP_X_REQUEST_ID": request_id}
    if session:
        headers["HTTP_X_TOOLHUB_SESSION"] = session
    body = {"task_id": "t-1", "call": {"id": "call_1", "name": name, "arguments": arguments}}
    return api.post("/api/v1/invoke", body, format="json", **headers)


@shared_task(name="tests.ops.log_a_line")
def log_a_line_task() -> None:
    task_logger.info("inside the task")


def test_the_callers_request_id_is_kept_answered_and_in_the_requests_log_lines(api, publish_tool, json_logs):
    publish_tool("lookup")

    response = invoke(api, "lookup", {"query": "a"}, request_id="agent-run-42.step:7")

    access = [r for r in json_logs.records() if r["logger"] == "toolhub.access"]
    assert response.status_code == 200 and response["X-Request-ID"] == "agent-run-42.step:7"
    assert access and access[-1]["request_id"] == "agent-run-42.step:7"
    assert access[-1]["path"] == "/api/v1/invoke" and access[-1]["status"] == 200


def test_a_missing_or_unsafe_request_id_is_replaced_by_a_fresh_one(client):
    unsafe = ["has spaces", "line\nbreak", "x" * 65, "<script>"]

    answered = [client.get("/healthz", HTTP_X_REQUEST_ID=value)["X-Request-ID"] for value in unsafe]
    answered.append(client.get("/healthz")["X-Request-ID"])

    assert len(set(answered)) == len(answered)
    assert all(len(value) == 32 and int(value, 16) >= 0 for value in answered)


def test_an_internal_error_answers_its_error_id_and_request_id_and_logs_both(
    api, publish_tool, session_for, json_logs
):
    publish_tool("broken_lookup", executor_config={"callable": "tests.crash"})

    response = invoke(api, "broken_lookup", {"query": "a"}, session=session_for("u-1"), request_id="req-1")

    body = response.json()
    errors = [r for r in json_logs.records() if r["level"] == "ERROR" and r["logger"] == "toolhub.api"]
    assert response.status_code == 500 and body["kind"] == "internal"
    assert body["request_id"] == "req-1" and body["error_id"]
    assert "secret internal detail" not in response.content.decode()
    assert len(errors) == 1
    assert errors[0]["request_id"] == "req-1" and errors[0]["error_id"] == body["error_id"]
    assert "secret internal detail" in errors[0]["exc_info"]  # the operator gets the traceback


def test_an_executor_crash_inside_a_write_also_carries_the_request_id(api, publish_tool, session_for):
    publish_tool("broken_write", side_effect="write", executor_config={"callable": "tests.crash"})

    body = invoke(api, "broken_write", {"query": "a"}, session=session_for("u-1"), request_id="req-2").json()

    assert body["kind"] == "internal" and body["request_id"] == "req-2" and body["error_id"]


def test_keys_and_session_tokens_never_reach_the_logs_even_at_debug_and_in_errors(
    agent, publish_tool, session_for, json_logs, settings, client
):
    settings.DEBUG = True  # Django logs every SQL statement at DEBUG then
    key = agent_key_issue(agent=agent).secret
    prefix, secret_part = key[: len("thk_") + 10], key[len("thk_") + 11 :]
    token = session_for("u-1")
    publish_tool("lookup")
    publish_tool("broken_lookup", executor_config={"callable": "tests.crash"})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}", "HTTP_X_TOOLHUB_SESSION": token}
    body = {"task_id": "t-1", "call": {"id": "c1", "name": "lookup", "arguments": {"query": "a"}}}

    minted = client.post("/api/v1/sessions", {"subject": "u-2"}, content_type="application/json", **auth)
    client.post("/api/v1/invoke", body, content_type="application/json", **auth)
    client.post(
        "/api/v1/invoke",
        {**body, "call": {**body["call"], "name": "broken_lookup"}},
        content_type="application/json",
        **auth,
    )
    client.post(
        "/api/v1/invoke",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {prefix}_wrong{secret_part}",
        HTTP_X_TOOLHUB_SESSION=token,
    )
    client.post("/api/v1/invoke", "not json", content_type="application/json", **auth)

    records = json_logs.records()
    assert any(r["level"] == "DEBUG" and r["logger"] == "django.db.backends" for r in records)
    assert any(r["level"] == "ERROR" for r in records)
    assert secret_part not in json_logs.text
    assert token not in json_logs.text and minted.json()["token"] not in json_logs.text
    assert token.rsplit(":", 1)[1] not in json_logs.text  # not even the signature alone


def test_the_formatter_scrubs_credentials_that_code_might_log_by_mistake(json_logs, session_for):
    token = session_for("u-1")
    logger = logging.getLogger("tests.ops.careless")

    logger.warning(
        "headers: %s", {"Authorization": "Bearer thk_abc123_SuperSecretPart", "X-ToolHub-Session": token}
    )
    logger.error("retrying with bearer sk_live_123456 and token %s", token)
    logger.error("agent key thk_abc123_OtherSecretPart was revoked")
    logger.info("META %s", {"HTTP_AUTHORIZATION": "Basic dXNlcjpwYXNz", "HTTP_X_TOOLHUB_SESSION": token})

    text = json_logs.text
    assert "SuperSecretPart" not in text and "OtherSecretPart" not in text
    assert "sk_live_123456" not in text and "dXNlcjpwYXNz" not in text
    assert token not in text
    assert "thk_abc123_[redacted]" in text  # the public key prefix stays, to tell keys apart


def test_credentials_in_a_plain_line_with_other_than_ascii_letters_are_scrubbed_too(session_for):
    """JSON lines are ASCII (escaped); a plain line (LOG_FORMAT=plain) keeps its letters."""
    token = session_for("u-1")
    line = PlainFormatter().format(logging.LogRecord(
        "tests.ops.careless", logging.WARNING, __file__, 1,
        # "ſ" (long s) is an "s" to a pattern that ignores case, not to lower-casing.
        "für Benutzer: %s, BEARER sk_live_654321, Sitzung %s",
        ({"X-ToolHub-Seſſion": "plain-secret"}, token), None,
    ))

    assert "für Benutzer" in line
    assert "plain-secret" not in line
    assert "sk_live_654321" not in line and token not in line


def test_a_celery_tasks_log_lines_carry_its_task_id(json_logs):
    result = log_a_line_task.apply()

    lines = [r for r in json_logs.records() if r["message"] == "inside the task"]
    assert len(lines) == 1 and lines[0]["task_id"] == result.id
    logging.getLogger("tests.ops.after").info("after the task")
    assert json_logs.records()[-1]["task_id"] is None


def test_celery_processes_log_json_with_the_project_configuration():
    script = (
        "import logging, django; django.setup();"
        "from toolhub.celery import app; app.log.setup(loglevel='INFO');"
        "logging.getLogger('celery.worker').info('worker line')"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "toolhub.settings.test", "LOG_FORMAT": "json"}

    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert result.returncode == 0, result.stderr
    assert {"message": "worker line", "logger": "celery.worker", "level": "INFO"}.items() <= lines[-1].items()
    assert "task_id" in lines[-1] and "request_id" in lines[-1]


# What the processes log while idle or starting, shaped as Celery, gunicorn and the access
# middleware log it, and two lines that are news: a task that did real work, a refused call.
_EMIT_LINES = """
import logging, os, django; django.setup()
from toolhub.celery import app; app.log.setup(loglevel=os.environ["LOG_LEVEL"])
log = logging.getLogger
log('celery.beat').info('Scheduler: Sending due task %s (%s)', 'ledger-sweep', 'ledger.sweep')
log('celery.worker.strategy').info('Task %(name)s[%(id)s] received', {'name': 'ledger.sweep', 'id': 'a1'})
log('celery.app.trace').info('Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s',
    {'name': 'ledger.sweep', 'id': 'a1', 'runtime': 0.01, 'return_value': 0})
log('gunicorn.error').info('Booting worker with pid: %s', 42)
log('toolhub.access').info('GET /readyz 200', extra={'path': '/readyz', 'status': 200})
log('celery.app.trace').info('Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s',
    {'name': 'gateway.execute_entry', 'id': 'b2', 'runtime': 0.5, 'return_value': None})
log('toolhub.access').info('POST /api/v1/invoke 401', extra={'path': '/api/v1/invoke', 'status': 401})
log('py.warnings').warning('SecurityWarning: running as root:\\n\\nplease do not.\\n')
"""


def _emitted(**env: str) -> list[str]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "toolhub.settings.base", "LOG_FORMAT": "plain"}
    environment.update(env)
    environment.pop("LOG_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-c", _EMIT_LINES], cwd=ROOT, env=environment, capture_output=True, text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr.splitlines()


def test_routine_lines_are_logged_at_the_routine_level_and_news_stays_info():
    quiet = _emitted(LOG_LEVEL="INFO", LOG_ROUTINE_LEVEL="DEBUG")
    everything = _emitted(LOG_LEVEL="DEBUG", LOG_ROUTINE_LEVEL="DEBUG")
    default = _emitted(LOG_LEVEL="INFO")

    assert [line[len("2026-01-01 00:00:00 "):] for line in quiet] == [
        "INFO    celery.app.trace: Task gateway.execute_entry[b2] succeeded in 0.5s: None",
        "INFO    toolhub.access: POST /api/v1/invoke 401",
        "WARNING py.warnings: SecurityWarning: running as root: please do not.",
    ]
    routine = [line for line in everything if line.split()[2] == "DEBUG"]
    assert len(everything) == 8 and len(routine) == 5
    assert routine[0].endswith("DEBUG   celery.beat: Scheduler: Sending due task ledger-sweep (ledger.sweep)")
    assert len(default) == 8 and not any(" DEBUG " in line for line in default)


def test_plain_lines_are_coloured_only_on_a_terminal_or_when_asked():
    record = logging.LogRecord("toolhub.api", logging.ERROR, __file__, 1, "boom", None, None)
    record.request_id, record.task_id = "req-1", None

    coloured = PlainFormatter(colour=True).format(record)
    plain = PlainFormatter().format(record)
    piped = logging_config_from_env({"LOG_FORMAT": "plain"})["formatters"]["plain"]
    asked = logging_config_from_env({"LOG_FORMAT": "plain", "LOG_COLOR": "true"})["formatters"]["plain"]

    assert "\033[31mERROR" in coloured and coloured.endswith("\033[0m")
    assert plain.endswith("ERROR   toolhub.api: boom request_id=req-1") and "\033" not in plain
    assert piped["colour"] is False and asked["colour"] is True  # the suite's stderr is no terminal
