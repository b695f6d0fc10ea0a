"""apps.common owns what every app shares and belongs to none: abstract models (timestamps,
tenant ownership), the one error hierarchy and the DRF exception handler, JSON logs and
request ids, the cache backend, the egress policy, the task decorator and its table of task
names (tasks.py), the compatibility modules for library internals (compat/), and the
admin's building blocks.

May import: no app (layers contract, pyproject.toml). Where it needs an app's decision it
takes it from a setting or a hook the app registers.
"""

import logging

from django.apps import AppConfig
from django.core.signals import request_finished


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"
    verbose_name = "Common"

    def ready(self) -> None:
        from .middleware import unbind_request_id_when_finished

        request_finished.connect(unbind_request_id_when_finished, dispatch_uid="toolhub-request-id")
        # Python's warnings become log records too, so every line a process writes is JSON.
        logging.captureWarnings(True)
