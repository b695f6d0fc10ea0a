"""httpx's transports keep their connection pool in the private attribute `_pool`.

The internal: `httpx2.HTTPTransport._pool` (an `httpcore2.ConnectionPool`) and
`httpx2.AsyncHTTPTransport._pool` (an `httpcore2.AsyncConnectionPool`), built by the
transport's `__init__` and used by `handle_request` / `handle_async_request` for every
request. httpx takes no network backend, so the egress transports
(apps/gateway/executors/egress.py) build a pool with their policed backend and put it there.

Checked against httpx2 2.17.0 with httpcore2 2.17.0.

If it changes: a transport whose requests no longer go through `_pool` would connect with
httpcore's own backend, so the egress policy (the address checked at connect time) would
silently stop applying. tests/common/compat/test_httpx_pool.py fails first.
"""

from __future__ import annotations

import httpcore2
import httpx2

# The pool a transport built in its __init__ has opened no connection yet: it is dropped.


def use_pool(transport: httpx2.HTTPTransport, pool: httpcore2.ConnectionPool) -> None:
    """Make `transport` send every request through `pool`."""
    transport._pool = pool


def use_async_pool(transport: httpx2.AsyncHTTPTransport, pool: httpcore2.AsyncConnectionPool) -> None:
    """Make `transport` send every request through `pool`."""
    transport._pool = pool
