"""Settings of the benchmark's server: the base settings (toolhub/settings/base.py) plus the
bench-only tools and the bench's baseline view (bench/urls.py)."""

import os

from toolhub.settings.base import *  # noqa: F403
from toolhub.settings.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
ROOT_URLCONF = "bench.urls"
# Where the bare view of the imported GET pair sends its request (bench/static_refunds.py).
BENCH_STATIC_UPSTREAM_URL = os.environ.get("BENCH_STATIC_UPSTREAM_URL", "")
