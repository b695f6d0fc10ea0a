"""Test settings: PostgreSQL, Redis and a real broker, as `make test` provides them."""

import os

# Tests never read the run.env a developer's `make run` left under var/ (env_files.py).
os.environ["TOOLHUB_RUN_ENV"] = ""

from .base import *  # noqa: E402, F403
from .base import cache_from_env, database_from_env, env  # noqa: E402

# Production's database options (health checks, prepared statements), on a new connection
# per request.
DATABASES = {"default": database_from_env("postgres://postgres@127.0.0.1:5432/toolhub")}
DATABASES["default"]["CONN_MAX_AGE"] = 0
# A replica alias on the same test database (TEST MIRROR), for the tests of replica routing:
# they install ReplicaRouter themselves, so no other test reads through it.
DATABASES["replica"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
DATABASE_ROUTERS = []
CACHES = {"default": cache_from_env("redis://127.0.0.1:6379/1")}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# base names its filesystem transport when the environment names no broker; this one is Redis.
CELERY_BROKER_TRANSPORT = None
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SECRET_KEY = "test-secret-key-" + "t" * 40
TOOLHUB_INVOCATION_LOG_SYNC = True
TOOLHUB_RECONCILE_BACKOFF_S = [0.0, 0.0, 0.0]
TOOLHUB_SWEEP_GRACE_S = 0.5
# Tests do not run collectstatic: let WhiteNoise look files up per request instead of
# warning that STATIC_ROOT is missing.
WHITENOISE_AUTOREFRESH = True
# The tests' upstreams (live servers, fake upstreams) listen on loopback; tests of the
# egress policy override this to prove refusals.
TOOLHUB_EGRESS_ALLOW = ["127.0.0.1:*", "localhost:*"]
