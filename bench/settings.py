"""Settings of the benchmark's server: the base settings (toolhub/settings/base.py) plus the
bench-only tools."""

from toolhub.settings.base import *  # noqa: F403
from toolhub.settings.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
