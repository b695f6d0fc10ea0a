"""Production settings: `DJANGO_SETTINGS_MODULE=toolhub.settings.production`.

Everything that must not default is read without a default, so a missing variable stops
the process at start with Django's "Set the X environment variable" instead of running
half-configured. `manage.py check --deploy --fail-level WARNING` is clean with these
(tests/ops/test_production_settings.py). HTTPS is assumed: the admin's cookies are
Secure, HSTS is sent, and plain HTTP is redirected, except the probes and /metrics, which
orchestrators and Prometheus reach inside the network.
"""

from django.core.exceptions import ImproperlyConfigured

from apps.upstreams.crypto import key_problem

from .base import *  # noqa: F403
from .base import TOOLHUB_SECRETS, cache_from_env, database_from_env, databases_with_replica, env

DEBUG = False

SECRET_KEY = env.str("SECRET_KEY")
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("insecure-dev-key"):
    raise ImproperlyConfigured(
        "SECRET_KEY is too weak for production: use 50 or more random characters, e.g. "
        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")
# Origins the admin's forms are posted from when they differ from the host (https://…).
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# The database, the cache and the broker are shared by every process: the defaults of
# base (SQLite, a per-process memory cache, a filesystem broker) would split them.
DATABASES = databases_with_replica(database_from_env())
DATABASE_ROUTERS = ["apps.common.replicas.ReplicaRouter"] if "replica" in DATABASES else []
CACHES = {"default": cache_from_env(env.str("CACHE_URL"))}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}

# HTTPS. Behind a proxy that terminates TLS, name the header it sets (X-Forwarded-Proto)
# in TOOLHUB_PROXY_SSL_HEADER; only do so when the proxy always overwrites that header.
_proxy_ssl_header = env.str("TOOLHUB_PROXY_SSL_HEADER", default="")
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)

# The admin: session and CSRF cookies only over HTTPS and out of reach of scripts.
# (CsrfViewMiddleware is in base; the agent API authenticates with a bearer key instead.)
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# Prometheus must authenticate: the figures name tools, tenants' volumes and queue sizes.
TOOLHUB_METRICS_TOKEN = env.str("TOOLHUB_METRICS_TOKEN")

# Credentials are encrypted with these keys, never with one derived from SECRET_KEY: rotating
# SECRET_KEY must not make every stored credential unreadable.
TOOLHUB_ENCRYPTION_KEYS = [key.strip() for key in env.list("TOOLHUB_ENCRYPTION_KEYS") if key.strip()]
if not TOOLHUB_ENCRYPTION_KEYS:
    raise ImproperlyConfigured(
        "Set the TOOLHUB_ENCRYPTION_KEYS environment variable (Fernet keys, newest first)."
    )
for _index, _key in enumerate(TOOLHUB_ENCRYPTION_KEYS):
    if _problem := key_problem(_key):
        raise ImproperlyConfigured(f"TOOLHUB_ENCRYPTION_KEYS: key {_index + 1} is {_problem}.")

# The demo shop's fake payments provider is off unless asked for, and then needs its own key.
TOOLHUB_DEMO_ENABLED = env.bool("TOOLHUB_DEMO_ENABLED", default=False)
if TOOLHUB_DEMO_ENABLED:
    TOOLHUB_SECRETS = {**TOOLHUB_SECRETS, "DEMO_PAYMENTS_API_KEY": env.str("DEMO_PAYMENTS_API_KEY")}
