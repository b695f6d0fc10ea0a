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
