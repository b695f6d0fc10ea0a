#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")
    if sys.argv[1:2] != ["runserver"]:
        # A command's output is its report: logs in plain lines, no library chatter
        # (apps/common/logs.py). A server keeps the server's logs.
        os.environ.setdefault("LOG_PROFILE", "command")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
