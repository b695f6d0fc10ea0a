"""The Celery app and the one beat schedule of the project."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings.base")

app = Celery("toolhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The one beat schedule of the project (README "Operations" says what each job does).
app.conf.beat_schedule = {
    "ledger-sweep": {"task": "ledger.sweep", "schedule": 15.0},
    "ledger-reconcile-due": {"task": "ledger.reconcile_due", "schedule": 10.0},
}
