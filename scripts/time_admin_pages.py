"""Time the ledger's admin pages on an existing (large) database: first load and warm median.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/toolhub_bench LOG_LEVEL=WARNING \
        .venv/bin/python scripts/time_admin_pages.py

Uses the seeded demo admin; reads only.
"""

import os
import statistics
import time

os.environ["DJANGO_SETTINGS_MODULE"] = "toolhub.settings.base"
import django

django.setup()
from django.conf import settings  # noqa: E402

settings.ALLOWED_HOSTS = ["*"]

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from apps.ledger.models import LedgerEntry  # noqa: E402

c = Client()
c.force_login(get_user_model().objects.get(username="admin"))
task = LedgerEntry.objects.order_by().values_list("task_id", flat=True).first()
entry = LedgerEntry.objects.order_by().values_list("pk", flat=True).first()
pages = {
    "ledger list": "/admin/ledger/ledgerentry/",
    "ledger, state=unknown": "/admin/ledger/ledgerentry/?state__exact=unknown",
    "ledger, search a task id": f"/admin/ledger/ledgerentry/?q={task}",
    "ledger entry page": f"/admin/ledger/ledgerentry/{entry}/change/",
    "triage queue": "/admin/ledger/triageentry/",
    "dashboard 24 h": "/admin/dashboard/",
}
for name, url in pages.items():
    times = []
    for _ in range(4):
        start = time.perf_counter()
        response = c.get(url)
        times.append((time.perf_counter() - start) * 1000)
    print(
        f"{name:28} status {response.status_code}  first {times[0]:7.0f} ms  "
        f"median of next 3 {statistics.median(times[1:]):7.0f} ms"
    )
