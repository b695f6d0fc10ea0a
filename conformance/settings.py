"""Settings of the conformance run: the test settings (PostgreSQL and Redis from the
environment, loopback egress allowed, the invocation log written synchronously) on a
database of its own, which `conformance.run` creates and drops.

The database is named after DATABASE_URL's with `_conformance` appended, so a run never
touches a developer's database nor the test suite's (`test_<name>`)."""

import os
import time

from toolhub.settings.test import *  # noqa: F403
from toolhub.settings.test import CACHES, DATABASES

DATABASES = {"default": {**DATABASES["default"]}}
DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}_conformance"}
# One call per imported tool, hundreds per document, from one agent.
TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE = 1_000_000
# The cache (Redis, shared with whatever else uses that Redis database) gets a prefix of this
# run's own: a fresh database restarts ids at 1, and catalog entries cached by a previous run
# under the same ids must not be read.
CACHES = {"default": {**CACHES["default"], "KEY_PREFIX": f"conformance-{os.getpid()}-{time.time_ns()}"}}
