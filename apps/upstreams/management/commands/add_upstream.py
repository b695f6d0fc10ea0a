"""`manage.py add_upstream NAME --tenant SLUG --kind http|mcp (--url URL | --command "LAUNCHER
ARGS…") [--credential NAME]`: create or update an upstream. `--command` names a launcher the
platform registered (`add_mcp_launcher`) and the arguments appended to its command: a tenant
never names an executable."""

from __future__ import annotations

import shlex
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.common.egress import egress_policy
from apps.upstreams.models import McpLauncher, Upstream, UpstreamKind, owned_by
from apps.upstreams.selectors import credential_get
from apps.upstreams.services import upstream_save

from ._owner import add_owner_arguments, owner_from, refused

ACTOR = "cli:add_upstream"


class Command(BaseCommand):
    help = "Create or update an upstream (an external system tool versions name in executor_config)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The upstream's name, e.g. orders-api.")
        add_owner_arguments(parser)
        parser.add_argument("--kind", choices=UpstreamKind.values, default=UpstreamKind.HTTP)
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--url", help="Base URL, e.g. https://api.example.com/v2.")
        where.add_argument(
            "--command", dest="launch_command",
            help='MCP servers that speak stdio: a launcher\'s name and the arguments appended to its '
            'command, e.g. "mcp-server-git --repository /srv/repos/docs".',
        )
        parser.add_argument(
            "--credential", help="Name of a credential of the same owner (kept as is when left out)."
        )
        parser.add_argument("--timeout", type=float, help="Default timeout in seconds (10 for a new one).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = owner_from(options)
        tenant_id = tenant.pk if tenant is not None else None
        upstream = Upstream.objects.filter(owned_by(tenant_id), name=options["name"]).first()
        creating = upstream is None
        if upstream is None:
            upstream = Upstream(tenant_id=tenant_id, name=options["name"])
        upstream.kind = options["kind"]
        upstream.base_url, upstream.launcher, upstream.launcher_args = _where(options)
        if options["timeout"] is not None:
            upstream.timeout_s = options["timeout"]
        if options["credential"]:
            credential = credential_get(tenant_id=tenant_id, name=options["credential"])
            if credential is None:
                raise CommandError(
                    f"No credential '{options['credential']}' of the same owner; create it first with "
                    "`manage.py set_credential`."
                )
            upstream.credential = credential
        try:
            upstream_save(upstream=upstream, actor=ACTOR)
        except ValidationError as error:
            raise refused(error) from None
        owner = options["tenant"] if tenant is not None else "the platform"
        self.stdout.write(f"{'Created' if creating else 'Updated'} upstream {upstream.name} of {owner}.")
        if upstream.base_url and (refusal := egress_policy().url_refusal(upstream.base_url)):
            self.stderr.write(self.style.WARNING(
                f"The egress policy refuses it, so calls will not be sent: {refusal}."
            ))


def _where(options: dict[str, Any]) -> tuple[str, McpLauncher | None, list[str]]:
    """The URL, or the launcher and its arguments, the options name."""
    if options["url"] is not None:
        return options["url"], None, []
    try:
        words = shlex.split(options["launch_command"])
    except ValueError as exc:
        raise CommandError(f"--command is not a command line: {exc}.") from None
    if not words:
        raise CommandError("--command names no launcher.")
    name, *args = words
    launcher = McpLauncher.objects.filter(name=name).first()
    if launcher is None:
        known = ", ".join(McpLauncher.objects.values_list("name", flat=True)) or "none yet"
        raise CommandError(
            f"No launcher '{name}' (registered: {known}). The platform registers launchers "
            "(`manage.py add_mcp_launcher`, or the admin as a superuser)."
        )
    return "", launcher, args
