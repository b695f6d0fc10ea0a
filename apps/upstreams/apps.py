from django.apps import AppConfig


class UpstreamsConfig(AppConfig):
    name = "apps.upstreams"
    label = "upstreams"
    verbose_name = "Upstreams"
