"""`manage.py add_mcp_launcher NAME --command "EXECUTABLE ARGS…" [--read PATH]… [--write PATH]…
[--env NAME]… [--allow-args] [--network] [--memory-mb N] [--cpu-s N] [--max-processes N]
[--max-open-files N] [--idle-stop-s N] [--description TEXT]`: register or replace a launcher,
the command the platform lets tenants run as a stdio MCP server (apps/bridge runs it isolated).

An operator's decision, as a superuser's in the admin: whoever runs manage.py on ToolHub's
machines is the platform. Options left out keep a launcher's current values (the model's
defaults for a new one); --read, --write and --env replace the whole list when given.
"""

from __future__ import annotations

import shlex
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.upstreams.models import McpLauncher
from apps.upstreams.services import launcher_save

from ._owner import refused

ACTOR = "cli:add_mcp_launcher"
LIMITS = ("memory_mb", "cpu_s", "max_processes", "max_open_files", "idle_stop_s")


class Command(BaseCommand):
    help = "Register or replace a launcher: a command tenants may run as a stdio MCP server, isolated."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The launcher's name, e.g. mcp-server-time.")
        parser.add_argument(
            "--command", required=True, dest="launch_command",
            help='The executable (absolute path) and its fixed arguments, as a shell would split '
            'them, e.g. "/opt/mcp/bin/mcp-server-time --local-timezone UTC".',
        )
        parser.add_argument("--read", action="append", metavar="PATH", help="A host path it may read.")
        parser.add_argument("--write", action="append", metavar="PATH", help="A host path it may write.")
        parser.add_argument(
            "--env", action="append", metavar="NAME",
            help="An environment variable a tenant's credential (kind env) may fill.",
        )
        parser.add_argument("--allow-args", action="store_true", help="Upstreams may append arguments.")
        parser.add_argument(
            "--network", action="store_true", help="The process shares the machine's network."
        )
        parser.add_argument("--description", help="What the server does, for curators.")
        for limit in LIMITS:
            parser.add_argument(f"--{limit.replace('_', '-')}", type=int, dest=limit)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            command = shlex.split(options["launch_command"])
        except ValueError as exc:
            raise CommandError(f"--command is not a command line: {exc}.") from None
        launcher = McpLauncher.objects.filter(name=options["name"]).first()
        creating = launcher is None
        if launcher is None:
            launcher = McpLauncher(name=options["name"])
        launcher.command = command
        launcher.allow_args, launcher.network = options["allow_args"], options["network"]
        for option, field in (("read", "read_paths"), ("write", "write_paths"), ("env", "env_names")):
            if options[option] is not None:
                setattr(launcher, field, options[option])
        if options["description"] is not None:
            launcher.description = options["description"]
        for limit in LIMITS:
            if options[limit] is not None:
                setattr(launcher, limit, options[limit])
        try:
            launcher_save(launcher=launcher, actor=ACTOR)
        except ValidationError as error:
            raise refused(error) from None
        done = "Registered" if creating else "Updated"
        self.stdout.write(f"{done} launcher {launcher.name}: {shlex.join(launcher.command)}")
