"""The imported GET pair's upstream: bench/static_upstream.py answering the refunds listing.

The governed `list_order_refunds` and the bench's bare view used to call the demo payments
provider inside the same gunicorn, so both loads counted the provider's own request as
ToolHub's CPU. Here the listing is taken once from the provider (in-process), then served by
a process of its own, and the platform upstream `demo-payments` is pointed at it: what a load
of either side costs gunicorn and PostgreSQL is ToolHub's work around one outbound call.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.test import Client

from apps.demo_shop.seed import DEMO_UPSTREAM
from apps.upstreams.models import Upstream
from apps.upstreams.services import upstream_save

from .load import ROOT, wait_until_healthy
from .seed import REFUNDED_ORDER, SEED_ACTOR

LOG = ROOT / "var" / "bench-static-upstream.log"
BODY = ROOT / "var" / "bench-refunds.json"
LISTING_PATH = f"/orders/{REFUNDED_ORDER}/refunds"


@contextmanager
def static_refunds_upstream(*, port: int) -> Iterator[str]:
    """The static upstream on loopback `port` answering REFUNDED_ORDER's refunds as the
    provider lists them, with `demo-payments` pointed at it, until the block ends; its URL
    yielded (the bare view's BENCH_STATIC_UPSTREAM_URL)."""
    listing = Client().get(
        f"/demo/payments{LISTING_PATH}",
        headers={"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"},
    )
    if listing.status_code != 200:
        raise SystemExit(f"the provider did not list the refunds ({listing.status_code}): "
                         f"{listing.content!r}")
    BODY.parent.mkdir(exist_ok=True)
    BODY.write_bytes(listing.content)
    with open(LOG, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.static_upstream", "--port", str(port),
             "--path", LISTING_PATH, "--body", str(BODY)],
            cwd=ROOT, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, what="the static upstream", log=LOG, seconds=20)
        upstream = Upstream.objects.get(tenant=None, name=DEMO_UPSTREAM)
        upstream.base_url = url
        upstream_save(upstream=upstream, actor=SEED_ACTOR)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
