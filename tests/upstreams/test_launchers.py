"""Launchers (the commands the platform lets tenants run as stdio MCP servers) and the
upstreams that name them: who may register one, what an upstream may add, and how the
executors are pointed at the bridge that runs the process."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.common.egress import egress_policy
from apps.upstreams.bridge import (
    CREDENTIAL_HEADER,
    LAUNCH_HEADER,
    ProcessAddress,
    bridge_token,
    spec_from_header,
)
from apps.upstreams.models import McpLauncher, Upstream
from apps.upstreams.selectors import upstream_for_call
from tests.factories import CredentialFactory, McpLauncherFactory, SubjectCredentialFactory, UpstreamFactory

pytestmark = pytest.mark.django_db

TIME = "/opt/mcp/bin/mcp-server-time"
TOKEN = "gh-token-5f0e9d8c7b6a"


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_an_operator_registers_a_launcher_from_the_command_line():
    out = _command(
        "add_mcp_launcher",
        "git",
        "--command",
        "/opt/mcp/bin/mcp-server-git --verbose",
        "--read",
        "/srv/repos",
        "--env",
        "GIT_TOKEN",
        "--allow-args",
        "--memory-mb",
        "256",
    )

    launcher = McpLauncher.objects.get()
    assert out == "Registered launcher git: /opt/mcp/bin/mcp-server-git --verbose\n"
    assert launcher.command == ["/opt/mcp/bin/mcp-server-git", "--verbose"]
    assert (launcher.read_paths, launcher.write_paths, launcher.env_names) == (
        ["/srv/repos"],
        [],
        ["GIT_TOKEN"],
    )
    assert (launcher.allow_args, launcher.network, launcher.memory_mb, launcher.cpu_s) == (
        True,
        False,
        256,
        300,
    )
    assert AuditEvent.objects.get(action="launcher.create").data["command"] == launcher.command


@pytest.mark.parametrize(
    ("command", "refusal"),
    [
        ("mcp-server-time", "must be an absolute path"),
        ("", "Name the executable"),
        ("'/opt/unclosed", "not a command line"),
    ],
)
def test_a_launcher_runs_only_an_absolute_executable(command, refusal):
    with pytest.raises(CommandError, match=refusal):
        _command("add_mcp_launcher", "time", "--command", command)
    assert not McpLauncher.objects.exists()


def test_a_launchers_paths_are_absolute_and_its_names_are_environment_names():
    with pytest.raises(CommandError) as refused:
        _command(
            "add_mcp_launcher",
            "time",
            "--command",
            TIME,
            "--read",
            "srv/../etc",
            "--write",
            "/srv/../etc",
            "--env",
            "1BAD",
        )

    message = str(refused.value)
    assert "read_paths: Use absolute paths without '..': srv/../etc." in message
    assert "write_paths: Use absolute paths without '..': /srv/../etc." in message
    assert "env_names: 1BAD:" in message


def test_a_tenant_adds_a_stdio_server_by_launcher_name_and_arguments(acme):
    McpLauncherFactory(name="git", command=["/opt/mcp/bin/mcp-server-git"], allow_args=True)

    out = _command(
        "add_upstream",
        "docs-repo",
        "--tenant",
        "acme",
        "--kind",
        "mcp",
        "--command",
        "git --repository '/srv/repos/docs site'",
    )

    upstream = Upstream.objects.get()
    assert out == "Created upstream docs-repo of acme.\n"
    assert (upstream.base_url, upstream.launcher.name) == ("", "git")
    assert upstream.launcher_args == ["--repository", "/srv/repos/docs site"]
    assert AuditEvent.objects.get(action="upstream.create").data["launcher"] == "git"


def test_a_tenant_never_names_an_executable(acme):
    McpLauncherFactory(name="time")

    with pytest.raises(CommandError, match=r"No launcher '/bin/sh' \(registered: time\)"):
        _command("add_upstream", "shell", "--tenant", "acme", "--kind", "mcp", "--command", "/bin/sh -c id")
    assert not Upstream.objects.exists()


@pytest.mark.parametrize(
    ("kind", "command", "refusal"),
    [
        ("mcp", "time --local-timezone Europe/Paris", "launcher_args: Launcher time takes no arguments"),
        ("http", "time", "launcher: Only an MCP server is run by a launcher"),
    ],
)
def test_an_upstream_adds_only_what_its_launcher_allows(acme, kind, command, refusal):
    McpLauncherFactory(name="time", allow_args=False)

    with pytest.raises(CommandError, match=refusal):
        _command("add_upstream", "clock", "--tenant", "acme", "--kind", kind, "--command", command)
    assert not Upstream.objects.exists()


def test_a_stdio_servers_credential_fills_an_environment_name_its_launcher_lists(acme):
    launcher = McpLauncherFactory(name="gh", env_names=["GITHUB_TOKEN"])
    bearer = CredentialFactory(tenant=acme, name="gh-bearer")
    other_name = CredentialFactory(tenant=acme, name="gh-other", kind="env", field="AWS_SECRET")

    with pytest.raises(ValidationError, match="use a credential of kind env"):
        UpstreamFactory(tenant=acme, kind="mcp", base_url="", launcher=launcher, credential=bearer)
    with pytest.raises(ValidationError, match="lets credentials fill GITHUB_TOKEN, not AWS_SECRET"):
        UpstreamFactory(tenant=acme, kind="mcp", base_url="", launcher=launcher, credential=other_name)
    with pytest.raises(ValidationError, match="an upstream with a URL needs one sent over HTTP"):
        UpstreamFactory(
            tenant=acme, kind="mcp", base_url="https://mcp.example.com/mcp", credential=other_name
        )
    assert not Upstream.objects.exists()


def test_the_executors_reach_a_stdio_server_through_the_bridge_told_what_to_run(acme, settings):
    settings.TOOLHUB_MCP_BRIDGE_URL = "http://127.0.0.1:8123"
    settings.TOOLHUB_EGRESS_ALLOW = []
    launcher = McpLauncherFactory(
        name="gh",
        command=["/opt/mcp/bin/gh-mcp", "stdio"],
        env_names=["GITHUB_TOKEN"],
        allow_args=True,
        read_paths=["/srv/ro"],
        memory_mb=256,
    )
    credential = CredentialFactory(
        tenant=acme, name="gh-token", kind="env", field="GITHUB_TOKEN", value=TOKEN
    )
    upstream = UpstreamFactory(
        tenant=acme,
        name="github",
        kind="mcp",
        base_url="",
        launcher=launcher,
        launcher_args=["--toolsets", "repos"],
        credential=credential,
    )

    resolved = upstream_for_call(tenant_id=acme.pk, name="github", subject="u-1")

    assert resolved.base_url == f"http://127.0.0.1:8123/upstreams/{upstream.pk}/{acme.pk}/-/mcp"
    assert resolved.auth_headers["Authorization"] == f"Bearer {bridge_token()}"
    assert resolved.auth_headers[CREDENTIAL_HEADER] == TOKEN
    spec = spec_from_header(resolved.auth_headers[LAUNCH_HEADER])
    assert spec["command"] == ["/opt/mcp/bin/gh-mcp", "stdio", "--toolsets", "repos"]
    assert (spec["env_name"], spec["read_paths"], spec["memory_mb"], spec["network"]) == (
        "GITHUB_TOKEN",
        ["/srv/ro"],
        256,
        False,
    )
    # The bridge is ToolHub's own: reachable whatever TOOLHUB_EGRESS_ALLOW says.
    assert egress_policy().url_refusal(resolved.base_url) is None
    assert egress_policy().url_refusal("http://127.0.0.1:8124/") is not None


def test_each_tenant_and_each_end_user_with_a_token_of_their_own_has_a_process_of_their_own(acme, globex):
    platform_time = UpstreamFactory(
        tenant=None, name="clock", kind="mcp", base_url="", launcher=McpLauncherFactory(name="time")
    )
    own = SubjectCredentialFactory(
        credential__tenant=acme,
        credential__name="crm-token",
        credential__kind="env",
        credential__field="CRM_TOKEN",
        subject="alice",
    )
    crm = UpstreamFactory(
        tenant=acme,
        name="crm",
        kind="mcp",
        base_url="",
        credential=own.credential,
        launcher=McpLauncherFactory(name="crm", env_names=["CRM_TOKEN"]),
    )

    for_acme = upstream_for_call(tenant_id=None, name="clock", subject="", calling_tenant_id=acme.pk)
    for_globex = upstream_for_call(tenant_id=None, name="clock", subject="", calling_tenant_id=globex.pk)
    for_alice = upstream_for_call(tenant_id=acme.pk, name="crm", subject="alice", agent_id=own.agent_id)
    addresses = [
        ProcessAddress.from_path("/" + r.base_url.split("/", 3)[3]) for r in (for_acme, for_globex, for_alice)
    ]

    assert [(a.upstream_id, a.tenant_id) for a in addresses] == [
        (platform_time.pk, acme.pk),
        (platform_time.pk, globex.pk),
        (crm.pk, acme.pk),
    ]
    assert addresses[0].subject_key == addresses[1].subject_key == ""
    assert len(addresses[2].subject_key) == 32 and "alice" not in for_alice.base_url
    assert for_alice.auth_headers[CREDENTIAL_HEADER] == "token-of-alice-0123"


def test_only_a_superuser_registers_or_changes_a_launcher_in_the_admin(acme_staff, superuser):
    launcher = McpLauncherFactory(name="time")
    form = {
        "name": "sh",
        "command": "/bin/sh\n-c\nid",
        "read_paths": "",
        "write_paths": "",
        "env_names": "",
        "memory_mb": 1024,
        "cpu_s": 300,
        "max_processes": 32,
        "max_open_files": 256,
        "idle_stop_s": 300,
    }

    listed = acme_staff.get(reverse("admin:upstreams_mcplauncher_changelist"))
    staff_add = acme_staff.post(reverse("admin:upstreams_mcplauncher_add"), form)
    staff_change = acme_staff.post(
        reverse("admin:upstreams_mcplauncher_change", args=[launcher.pk]), {**form, "name": "time"}
    )
    added = superuser.post(
        reverse("admin:upstreams_mcplauncher_add"), {**form, "read_paths": "/srv/a\n\n/srv/b b"}
    )

    assert listed.status_code == 403
    assert (staff_add.status_code, staff_change.status_code) == (403, 403)
    assert McpLauncher.objects.get(pk=launcher.pk).command[0].endswith("/bin/mcp-server-time")
    assert added.status_code == 302
    sh = McpLauncher.objects.get(name="sh")
    assert (sh.command, sh.read_paths) == (["/bin/sh", "-c", "id"], ["/srv/a", "/srv/b b"])
    assert set(AuditEvent.objects.filter(action="launcher.create").values_list("actor", flat=True)) == {
        "test", "admin:root"
    }


def test_tenant_staff_add_a_stdio_server_in_the_admin_by_choosing_a_launcher(acme, acme_staff):
    launcher = McpLauncherFactory(name="git", command=["/opt/mcp/bin/mcp-server-git"], allow_args=True)

    added = acme_staff.post(
        reverse("admin:upstreams_upstream_add"),
        {
            "name": "docs-repo",
            "kind": "mcp",
            "base_url": "",
            "timeout_s": 10,
            "launcher": launcher.pk,
            "launcher_args": "--repository\n/srv/repos/docs",
            "sync_interval_minutes": 15,
        },
    )
    listing = acme_staff.get(reverse("admin:upstreams_upstream_changelist")).content.decode()

    assert added.status_code == 302, added.content.decode()[:2000]
    upstream = Upstream.objects.get()
    assert (upstream.tenant, upstream.launcher_args) == (acme, ["--repository", "/srv/repos/docs"])
    assert "launcher git --repository /srv/repos/docs" in listing and "launcher: no network" in listing
