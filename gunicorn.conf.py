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
from typing import Any

from apps.common.logs import logging_config_from_env

# The longest timeout a tool version may declare (ToolVersion.timeout_s ≤ 600 s), plus a
# margin: a request waiting on its executor must answer `timeout`, not be killed with its worker.
LONGEST_TOOL_TIMEOUT_S = 600

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * (os.cpu_count() or 1) + 1))
worker_class = "gthread"
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


def post_worker_init(worker: Any) -> None:
    """Once the worker has loaded Django, open the sessions of the MCP upstreams that granted
    tools call, on a thread of its own (TOOLHUB_MCP_WARM_S): the first call needs no handshake.
    After the fork: the sessions' event loop is the worker's. Meanwhile, before the worker
    serves, load the catalogs of the agents that called last (tens of ms, the database only),
    which an agent's first call to the worker would otherwise wait for. The worker's main
    thread serves no request, so its database connection is closed after."""
    from django.db import connections

    from apps.gateway.outbound import agent_catalogs_warm, mcp_sessions_warm_soon

    _freeze_loaded_objects()
    mcp_sessions_warm_soon()
    agent_catalogs_warm()
    connections.close_all()


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
