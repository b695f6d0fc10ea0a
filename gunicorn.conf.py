"""Gunicorn's configuration for ToolHub's web processes (read from the working directory).

Every value comes from the environment so one image serves any size of machine:

| variable | default | what it does |
|---|---|---|
| GUNICORN_BIND | 0.0.0.0:8000 | where to listen |
| WEB_CONCURRENCY | 2 × cores + 1 | worker processes |
| GUNICORN_THREADS | 4 | threads per worker (gthread): a slow tool call holds a thread, not a process |
| GUNICORN_TIMEOUT | 660 | seconds before a silent worker is restarted: above the longest tool timeout |
| GUNICORN_SWITCH_INTERVAL_MS | 0.5 | ms a thread keeps the GIL while another waits (Python: 5) |
| PROMETHEUS_MULTIPROC_DIR | a new directory per server | where workers keep their metric values |
| GUNICORN_CONTROL_SOCKET | (off) | a path for gunicorn's control socket (`gunicornc`), one per server |

Command-line flags win over this file (`make run` and `make bench` pass their own).
"""

from __future__ import annotations

import gc
import glob
import os
import shutil
import sys
import tempfile
import threading
from typing import Any

from apps.common.logs import logging_config_from_env

# The longest timeout a tool version may declare (ToolVersion.timeout_s ≤ 600 s), plus a
# margin: a request waiting on its executor must answer `timeout`, not be killed with its worker.
LONGEST_TOOL_TIMEOUT_S = 600

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * (os.cpu_count() or 1) + 1))
# gthread, taking turns to accept connections (toolhub/gthread.py).
worker_class = "toolhub.gthread.TurnTakingThreadWorker"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", str(LONGEST_TOOL_TIMEOUT_S + 60)))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = 5

# gunicorn 25+ opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl): a
# second server on the machine took it over and, stopping, deleted the first one's. Off
# unless a path of this server's own is given.
if os.environ.get("GUNICORN_CONTROL_SOCKET"):
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]
else:
    control_socket_disable = True

# Logs go to stderr as JSON (apps/common/logs.py). Gunicorn's access log stays off:
# RequestIdMiddleware writes one line per request, with its request id.
errorlog = "-"
logconfig_dict = logging_config_from_env(os.environ)

# prometheus_client's multiprocess mode: each worker writes its counters to files in this
# directory and /metrics adds them up, whichever worker serves the scrape. Set here, in the
# master, before any worker imports prometheus_client.
# Without one set, each server makes its own and removes it when it exits.
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="toolhub-metrics-")
    os.environ["TOOLHUB_METRICS_DIR_OWNED"] = "1"


def on_starting(server: Any) -> None:
    """Start from empty files: values of a previous server would be counted again."""
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(directory, exist_ok=True)
    for path in glob.glob(os.path.join(directory, "*.db")):
        os.remove(path)


# The threads of a worker share the GIL: a thread whose database or Redis answer has arrived
# waits until the running thread lets go, by default after 5 ms. An invoke waits on I/O
# several times (cache, database, the executor's thread), so under load it queued behind
# other requests several times per call; measured in docs/performance.md.
SWITCH_INTERVAL_S = float(os.environ.get("GUNICORN_SWITCH_INTERVAL_MS", "0.5")) / 1000


def post_fork(server: Any, worker: Any) -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S)


# How long a starting worker waits for its MCP sessions before it serves: long enough for a
# handshake (tens of ms), short enough that an upstream that does not answer delays no start.
SESSIONS_WAIT_S = 1.0


def post_worker_init(worker: Any) -> None:
    """Once the worker has loaded Django, leave what it loaded out of the garbage collector's
    full collections (with each model's field lists and the C library's name service, built
    on first use), then pay before it serves what its first requests would: the sessions
    of the MCP upstreams that granted tools call (opened on a thread of their own within
    TOOLHUB_MCP_WARM_S, waited for at most SESSIONS_WAIT_S; after the fork, so their event
    loop is the worker's), the catalogs of the agents that called last (the database only),
    the keys used last (so a first call takes its key on trust, as later ones do), the
    threads of the invocation log writer and of the body read deadlines, the URL patterns'
    regexes, and each request thread with its database and cache connections. The worker's
    main thread serves no request, so its own database connection is closed."""
    from django.db import connections

    from apps.audit.invocation_log import invocation_log_writer_start
    from apps.common.read_deadlines import read_deadlines
    from apps.gateway.outbound import agent_catalogs_warm, mcp_sessions_warm_soon
    from apps.tenancy.authentication import agent_keys_warm

    _fill_model_field_caches()
    _load_name_service()
    _freeze_loaded_objects()
    sessions = mcp_sessions_warm_soon()
    agent_catalogs_warm()
    agent_keys_warm()
    invocation_log_writer_start()
    read_deadlines.start()
    _compile_url_patterns()
    connections.close_all()
    _connect_request_threads(worker)
    sessions.join(timeout=SESSIONS_WAIT_S)


def _connect_request_threads(worker: Any) -> None:
    """Start the worker's request threads (gthread's pool) and open each one's database and
    cache connections, which its first request would otherwise open."""
    pool = getattr(worker, "tpool", None)
    if pool is None:
        return
    from concurrent.futures import wait

    from django.core.cache import cache
    from django.db import connection

    # Every thread waits for the others, so each task runs on a thread of its own.
    started = threading.Barrier(worker.cfg.threads, timeout=5)

    def connect() -> None:
        try:
            started.wait()
        except threading.BrokenBarrierError:
            pass
        connection.ensure_connection()
        cache.get("toolhub:warm")

    wait([pool.submit(connect) for _ in range(worker.cfg.threads)], timeout=10)


def _compile_url_patterns() -> None:
    """Compile every URL pattern's regex: Django compiles each on its first match (or the
    first reverse()), which the first request to reach it would pay."""
    from django.urls import get_resolver

    get_resolver().reverse_dict  # noqa: B018 - populating it compiles every pattern


def _fill_model_field_caches() -> None:
    """Build each model's field lists, which Django makes when the model is first
    instantiated (0.15 ms for the invocation log's row, on a process's first call)."""
    from django.apps import apps

    for model in apps.get_models():
        model._meta.concrete_fields  # noqa: B018 - a cached property, filled by reading it


def _load_name_service() -> None:
    """Make one name lookup: the C library loads its name-service modules and configuration
    on a process's first, which the egress check of the first call to an upstream would pay
    (0.25 ms)."""
    import socket

    try:
        socket.getaddrinfo("localhost", None)
    except OSError:
        pass  # a machine without it: the first upstream's lookup pays


def _freeze_loaded_objects() -> None:
    """Leave what the worker has loaded (Django, the URL conf, the SDKs: ~200,000 objects) out
    of the garbage collector's full collections. Each full collection walked them all, 85-140 ms
    here with the worker's threads stopped, which every request of the worker waited out: the
    p99 of a load was a collection. They live as long as the worker, so there is nothing for a
    collection to find among them."""
    gc.collect()
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A dead worker's live gauges must stop counting (its counters are kept)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    if os.environ.get("TOOLHUB_METRICS_DIR_OWNED"):
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
