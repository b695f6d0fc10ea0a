"""Settings of the benchmark's server: the base settings (toolhub/settings/base.py) plus the
bench-only tools and the bench's baseline view (bench/urls.py)."""

from toolhub.settings.base import *  # noqa: F403
from toolhub.settings.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
ROOT_URLCONF = "bench.urls"
