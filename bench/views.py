"""The bench's own baseline: the imported GET tool's work done by a plain Django view.

It calls the same upstream endpoint as the governed `list_order_refunds` (the bench's static
upstream, bench/static_refunds.py) with the executor's own HTTP client (egress transport,
connection pool, User-Agent), and answers the JSON as it came: what is left of a governed
call without the agent key, session, validation, credential lookup, counters and invocation
log around it.
"""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from apps.gateway.outbound import http_client

TIMEOUT_S = 10.0


def bare_order_refunds(request: HttpRequest, order_id: str) -> JsonResponse:
    """`GET /bench/orders/{order_id}/refunds`: the provider's answer, relayed. Not behind any
    key: mounted only by `bench.settings`."""
    response = http_client().get(
        f"{settings.BENCH_STATIC_UPSTREAM_URL}/orders/{quote(order_id, safe='')}/refunds",
        headers={"Authorization": f"Bearer {settings.TOOLHUB_SECRETS['DEMO_PAYMENTS_API_KEY']}"},
        timeout=TIMEOUT_S,
    )
    if not response.is_success:
        return JsonResponse({"error": f"the provider answered HTTP {response.status_code}"}, status=502)
    return JsonResponse(response.json(), safe=False)
