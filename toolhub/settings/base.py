"""ToolHub settings, read from the environment (12-factor, django-environ).

The defaults need no running service: SQLite, a filesystem Celery broker and a local
memory cache. Setting DATABASE_URL / CELERY_BROKER_URL / CACHE_URL switches to
PostgreSQL, Redis or RabbitMQ.
"""

import os
from pathlib import Path

import environ

from apps.common.logs import logging_config_from_env

from .env_files import load_env_files

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
# The environment wins, then what `make run` derived (var/run.env), then .env: a command in a
# second shell sees the settings the running demo sees (toolhub/settings/env_files.py).
load_env_files(BASE_DIR)
# Where the zero-service defaults keep their files: SQLite, the filesystem broker, beat's
# schedule, collected static files (and `make run`'s file cache and run.env).
VAR_DIR = Path(env.str("TOOLHUB_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="insecure-dev-key-change-me-" + "x" * 24)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])

INSTALLED_APPS = [
    # django.contrib.admin with ToolHub's site: the dashboard and the branding.
    "apps.dashboards.apps.ToolHubAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.common",
    "apps.tenancy",
    "apps.catalog",
    "apps.ledger",
    "apps.audit",
    "apps.upstreams",
    "apps.bridge",
    "apps.capabilities",
    "apps.catalog_as_code",
    "apps.gateway",
    "apps.imports",
    "apps.demo_shop",
    "apps.dashboards.apps.DashboardsConfig",
]

MIDDLEWARE = [
    # First, so every response (redirects and errors included) and every log line has the id.
    "apps.common.middleware.RequestIdMiddleware",
    # Before anything that reads a body (CSRF reads the admin's forms).
    "apps.common.middleware.BodyRefusalMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's static files from gunicorn: `make run` has no separate web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The admin's sessions, user and messages: Django's, off the agent API's paths.
    "apps.common.admin_middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "apps.common.admin_middleware.AuthenticationMiddleware",
    "apps.common.admin_middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # The admin's lists and the dashboard read the replica, when there is one.
    "apps.common.replicas.ReplicaReadsMiddleware",
    "apps.common.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "toolhub.urls"
WSGI_APPLICATION = "toolhub.wsgi.application"
ASGI_APPLICATION = "toolhub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

def database_from_env(default: str = environ.Env.NOTSET, *, var: str = "DATABASE_URL") -> dict:
    """DATABASE_URL (or `var`) as Django's database settings (required when there is no default)."""
    config = env.db(var, default=default)
    # A new connection per request costs ~5x on these machines (docs/performance.md).
    config["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=600)
    config["CONN_HEALTH_CHECKS"] = True
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Django's, with a health check that reads the socket instead of a SELECT 1 round trip.
        config["ENGINE"] = "apps.common.postgresql"
        # A database host that drops packets would otherwise hang each request for minutes
        # (libpq waits forever by default): give up after a few seconds and answer 503.
        config.setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
        # The ledger's writes bind their parameters on the server (apps/common/db.py), and psycopg
        # prepares such a statement on its fifth use on a connection, which spares PostgreSQL
        # planning it again. Django's own queries bind on the client and are never prepared.
        # A connection pooler in transaction mode without prepared statements support (PgBouncer
        # before 1.21) needs DATABASE_PREPARED_STATEMENTS=off.
        if env.bool("DATABASE_PREPARED_STATEMENTS", default=True):
            config["OPTIONS"].setdefault("prepare_threshold", 5)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # SQLite is the zero-service demo default: wait for the writer lock instead of failing.
        config.setdefault("OPTIONS", {})["timeout"] = 20
        VAR_DIR.mkdir(parents=True, exist_ok=True)
    return config


def databases_with_replica(default: dict) -> dict:
    """The databases: `default`, plus `replica` when DATABASE_REPLICA_URL names a read replica
    (apps/common/replicas.py says which reads go there)."""
    databases = {"default": default}
    if env.str("DATABASE_REPLICA_URL", default=""):
        databases["replica"] = database_from_env(var="DATABASE_REPLICA_URL")
        # Tests on a replica setup read the test database through both aliases.
        databases["replica"]["TEST"] = {"MIRROR": "default"}
    return databases


DATABASES = databases_with_replica(database_from_env(f"sqlite:///{VAR_DIR / 'toolhub.sqlite3'}"))
DATABASE_ROUTERS = ["apps.common.replicas.ReplicaRouter"] if "replica" in DATABASES else []

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"



def cache_from_env(default: str) -> dict:
    """CACHE_URL as a Django cache, using our Redis backend that reuses its client."""
    config = env.cache("CACHE_URL", default=default)
    if config["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
        config["BACKEND"] = "apps.common.cache.RedisCache"
    return config


CACHES = {"default": cache_from_env("locmemcache://toolhub")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The admin's stylesheet and the vendored chart library (no CDN: static/vendor/).
STATICFILES_DIRS = [BASE_DIR / "static"]

# Bodies over this size answer 413 before anything is parsed (apps/common/wsgi.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("TOOLHUB_MAX_BODY_BYTES", default=1_048_576)
# The largest OpenAPI document an import reads (an upload, a file, a URL): today's Stripe and
# GitHub documents are 10-15 MB.
TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES = env.int("TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES", default=50 * 1024 * 1024)
# The admin's pages take uploads (an OpenAPI document of up to the import's limit, with the
# form around it).
TOOLHUB_ADMIN_MAX_BODY_BYTES = env.int(
    "TOOLHUB_ADMIN_MAX_BODY_BYTES", default=TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES + 1024 * 1024
)
# How long a request body may take to arrive, from its headers on: a client sending it a
# byte at a time holds a server thread, this long at most.
TOOLHUB_BODY_READ_TIMEOUT_S = env.float("TOOLHUB_BODY_READ_TIMEOUT_S", default=10.0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.tenancy.authentication.AgentKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.common.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.common.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "ToolHub API",
    "DESCRIPTION": "Governed tool invocation for LLM agents. The contract: docs/contract.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and ReDoc from drf-spectacular-sidecar's static files (WhiteNoise serves
    # them): the API docs need no CDN and stay the version the tests saw.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: the filesystem transport needs no broker process (the `make run` default).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
_FS_BROKER_DIR = VAR_DIR / "broker"
# Unacknowledged tasks come back after the visibility timeout: it must exceed the longest
# task (gateway.execute_entry's hard limit is 660 s), or a slow task would run twice.
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": 3600}
CELERY_BROKER_TRANSPORT: str | None = None  # None: the URL's scheme names the transport
if CELERY_BROKER_URL.startswith("filesystem"):
    # kombu's own, with message files written whole before a worker can take them.
    CELERY_BROKER_TRANSPORT = "apps.common.filesystem_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_FS_BROKER_DIR),
        "data_folder_out": str(_FS_BROKER_DIR),
        "processed_folder": str(VAR_DIR / "broker-processed"),
        # kombu's default is ./control, which would litter the checkout.
        "control_folder": str(VAR_DIR / "broker-control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Fail fast when the broker is down: the request answers 503 instead of hanging.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Outbound secrets are referenced by name from executor configs, never sent as arguments.
TOOLHUB_SECRETS = {
    "DEMO_PAYMENTS_API_KEY": env.str("DEMO_PAYMENTS_API_KEY", default="demo-payments-secret"),
    # What the demo shipping MCP server expects as its bearer token (it reads the same variable).
    "DEMO_SHIPPING_API_KEY": env.str("DEMO_SHIPPING_API_KEY", default="demo-shipping-secret"),
}
# Keys that encrypt upstream credentials at rest (apps/upstreams/crypto.py): comma-separated
# Fernet keys, newest first; the newest encrypts, all decrypt (`manage.py rotate_credentials`
# re-encrypts under the newest). Empty: one key derived from SECRET_KEY, for development and
# tests only; production settings require this.
TOOLHUB_ENCRYPTION_KEYS = env.list("TOOLHUB_ENCRYPTION_KEYS", default=[])
# Serve the demo shop's upstreams under /demo/ (production settings turn this off by default).
TOOLHUB_DEMO_ENABLED = env.bool("TOOLHUB_DEMO_ENABLED", default=True)
# Where the http executor reaches the demo payments upstream (served by this same process,
# so on the port `make run` serves: TOOLHUB_PORT).
TOOLHUB_DEMO_PAYMENTS_URL = env.str(
    "TOOLHUB_DEMO_PAYMENTS_URL",
    default=f"http://127.0.0.1:{env.int('TOOLHUB_PORT', default=8000)}/demo/payments",
)
# Where the mcp executor reaches the demo shipping MCP server `make run` starts
# (apps/demo_shop/shipping), on TOOLHUB_DEMO_MCP_PORT: by default the port after TOOLHUB_PORT.
TOOLHUB_DEMO_MCP_PORT = env.int("TOOLHUB_DEMO_MCP_PORT", default=env.int("TOOLHUB_PORT", default=8000) + 1)
TOOLHUB_DEMO_SHIPPING_MCP_URL = env.str(
    "TOOLHUB_DEMO_SHIPPING_MCP_URL", default=f"http://127.0.0.1:{TOOLHUB_DEMO_MCP_PORT}/mcp"
)
# Egress policy of executors (apps/gateway/executors/egress.py): loopback, private,
# link-local, unique-local and cloud-metadata addresses are refused unless this names the
# host: comma-separated host[:port] patterns (api.example.com, *.corp.example:8443,
# 127.0.0.1:*; no port means 80 and 443). Public hosts are allowed unless
# TOOLHUB_EGRESS_PUBLIC is false, which makes the list a strict allowlist.
TOOLHUB_EGRESS_ALLOW = env.list("TOOLHUB_EGRESS_ALLOW", default=[])
TOOLHUB_EGRESS_PUBLIC = env.bool("TOOLHUB_EGRESS_PUBLIC", default=True)
# What an agent can make a process hold for upstreams: open MCP sessions (one per tenant, URL
# and credential, so per end user with per-user tokens; the least recently used idle one is
# closed past the bound, any closed after the idle time), end users' tokens per per-user
# credential, and the bytes of one upstream answer read before giving up on it.
TOOLHUB_MCP_MAX_SESSIONS = env.int("TOOLHUB_MCP_MAX_SESSIONS", default=50)
TOOLHUB_MCP_SESSION_IDLE_S = env.float("TOOLHUB_MCP_SESSION_IDLE_S", default=300.0)
# Seconds a web or worker process gives, once started and on a thread of its own, to open the
# sessions of the MCP upstreams its granted tools call (0: none opened before the first call).
TOOLHUB_MCP_WARM_S = env.float("TOOLHUB_MCP_WARM_S", default=5.0)
# stdio MCP servers (launchers) run under the MCP bridge, one per machine (`manage.py
# mcp_bridge`, started by `make run`; apps/bridge): the executors reach it on loopback, by
# default on the port after the demo MCP server's. Each process gets a scratch directory here.
TOOLHUB_MCP_BRIDGE_PORT = env.int("TOOLHUB_MCP_BRIDGE_PORT", default=TOOLHUB_DEMO_MCP_PORT + 1)
TOOLHUB_MCP_BRIDGE_URL = env.str("TOOLHUB_MCP_BRIDGE_URL", default=f"http://127.0.0.1:{TOOLHUB_MCP_BRIDGE_PORT}")
TOOLHUB_MCP_SCRATCH_DIR = Path(env.str("TOOLHUB_MCP_SCRATCH_DIR", default=str(VAR_DIR / "mcp-scratch")))
# Code mode (`run_python`, apps/gateway/executors/sandbox): each run's sandbox gets a fresh
# scratch directory here, deleted after the run; each web or worker process keeps this many
# sandboxes started and waiting for code (0: each run starts its own, about 0.1 s more).
TOOLHUB_SANDBOX_SCRATCH_DIR = Path(
    env.str("TOOLHUB_SANDBOX_SCRATCH_DIR", default=str(VAR_DIR / "sandbox-scratch"))
)
TOOLHUB_SANDBOX_WARM = env.int("TOOLHUB_SANDBOX_WARM", default=2)
TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL = env.int("TOOLHUB_MAX_SUBJECTS_PER_CREDENTIAL", default=10_000)
TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = env.int("TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES", default=10 * 1024 * 1024)
# `seed_demo` derives the admin password from SECRET_KEY unless this is set.
TOOLHUB_ADMIN_PASSWORD = env.str("TOOLHUB_ADMIN_PASSWORD", default="")
TOOLHUB_SESSION_MAX_TTL_S = env.int("TOOLHUB_SESSION_MAX_TTL_S", default=86_400)
# Calls per agent and tool per minute where no tenant policy sets a rate limit.
TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE = env.int("TOOLHUB_DEFAULT_RATE_LIMIT_PER_MINUTE", default=600)
# Each scheduled rollup of the invocation log (apps/dashboards/rollups.py) rolls up again this
# many complete hours before the last one it covered, to pick up late rows.
TOOLHUB_ROLLUP_REROLL_HOURS = env.int("TOOLHUB_ROLLUP_REROLL_HOURS", default=2)
# Days of the dashboard's rollups kept: they outlive the raw invocation log, not forever.
TOOLHUB_ROLLUP_RETENTION_DAYS = env.int("TOOLHUB_ROLLUP_RETENTION_DAYS", default=400)
# Write the invocation log inline instead of from a background thread (tests).
TOOLHUB_INVOCATION_LOG_SYNC = env.bool("TOOLHUB_INVOCATION_LOG_SYNC", default=False)
# Days of invocation log and audit events kept: older partitions are dropped whole (PostgreSQL),
# older rows deleted (SQLite). Partitions are created this many days ahead (docs/log-partitions.md).
TOOLHUB_INVOCATION_LOG_RETENTION_DAYS = env.int("TOOLHUB_INVOCATION_LOG_RETENTION_DAYS", default=30)
TOOLHUB_AUDIT_RETENTION_DAYS = env.int("TOOLHUB_AUDIT_RETENTION_DAYS", default=400)
TOOLHUB_LOG_PARTITIONS_AHEAD_DAYS = env.int("TOOLHUB_LOG_PARTITIONS_AHEAD_DAYS", default=7)

# One JSON object per line with the request or task id (apps/common/logs.py); LOG_FORMAT=plain
# for a terminal. Celery workers and gunicorn use the same configuration. Read from the
# environment, which now holds .env's values too.
LOGGING = logging_config_from_env(os.environ)

# GET /metrics (Prometheus). When a token is set, scrapes must send `Authorization: Bearer
# <token>`; production settings require one.
TOOLHUB_METRICS_TOKEN = env.str("TOOLHUB_METRICS_TOKEN", default="")
# Decides which tenant's rows an admin user sees; the admins of every app apply it.
TOOLHUB_ADMIN_SCOPE = "apps.tenancy.admin_scoping.admin_scope_of"

# What /metrics computes at scrape time, besides the counters and histograms processes keep.
TOOLHUB_METRICS_COLLECTORS = [
    "apps.ledger.metrics.LedgerCollector",
    "apps.imports.metrics.DriftCollector",
    "apps.audit.metrics.LogRetentionCollector",
    "toolhub.metrics.CeleryQueueCollector",
    "apps.common.task_metrics.TaskMetricsCollector",
]

# Lint of tool definitions (apps/catalog/lint.py): a toolset above either limit is flagged.
TOOLHUB_LINT_MAX_TOOLSET_TOOLS = env.int("TOOLHUB_LINT_MAX_TOOLSET_TOOLS", default=12)
TOOLHUB_LINT_MAX_TOOLSET_TOKENS = env.int("TOOLHUB_LINT_MAX_TOOLSET_TOKENS", default=4000)
# Bounds of one OpenAPI or MCP import (apps/imports/limits.py); past one, the import is
# refused, naming the limit, its setting and where in the document it was hit.
TOOLHUB_IMPORT_MAX_DEPTH = env.int("TOOLHUB_IMPORT_MAX_DEPTH", default=64)
TOOLHUB_IMPORT_MAX_SCHEMA_NODES = env.int("TOOLHUB_IMPORT_MAX_SCHEMA_NODES", default=10_000)
TOOLHUB_IMPORT_MAX_IMPORT_NODES = env.int("TOOLHUB_IMPORT_MAX_IMPORT_NODES", default=1_000_000)
# GitHub's document has 874 operations, Stripe's 468.
TOOLHUB_IMPORT_MAX_OPERATIONS = env.int("TOOLHUB_IMPORT_MAX_OPERATIONS", default=2_000)
TOOLHUB_IMPORT_MAX_SECONDS = env.float("TOOLHUB_IMPORT_MAX_SECONDS", default=120.0)
# Reconciliation of unknown ledger entries: wait before each attempt; after the last, triage.
TOOLHUB_RECONCILE_BACKOFF_S = [
    float(s) for s in env.list("TOOLHUB_RECONCILE_BACKOFF_S", default=[10, 30, 120, 600, 1800])
]
# An executing entry is declared unknown this long after its tool's timeout.
TOOLHUB_SWEEP_GRACE_S = env.float("TOOLHUB_SWEEP_GRACE_S", default=30.0)
# How long an approval request stays open unless the version says otherwise.
TOOLHUB_APPROVAL_EXPIRES_S = env.int("TOOLHUB_APPROVAL_EXPIRES_S", default=3600)
