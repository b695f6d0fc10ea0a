"""`demo_scenarios` when nothing answers: the message says how to point it at a server."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.mcp_upstream import free_port

pytestmark = pytest.mark.django_db


def test_without_url_and_no_server_it_says_to_start_one_or_pass_url(monkeypatch):
    # Given make run's port (TOOLHUB_PORT) with nothing listening on it
    port = free_port()
    monkeypatch.setenv("TOOLHUB_PORT", str(port))

    # When the scenarios run without --url
    with pytest.raises(CommandError) as failed:
        call_command("demo_scenarios", stdout=io.StringIO())

    # Then the operator learns where it tried and what to do
    assert str(failed.value) == (
        f"ToolHub does not answer at http://127.0.0.1:{port} (ConnectError): is `make run` going? "
        "Start it, or pass --url with the address of the running ToolHub: this tried make run's "
        "address (no --url given)."
    )


def test_with_url_and_no_server_it_names_the_url_it_was_given():
    url = f"http://127.0.0.1:{free_port()}"

    with pytest.raises(CommandError, match=r"this tried --url\.$"):
        call_command("demo_scenarios", "--url", url, stdout=io.StringIO())
