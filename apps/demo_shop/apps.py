from django.apps import AppConfig


class DemoShopConfig(AppConfig):
    name = "apps.demo_shop"
    label = "demo_shop"
    verbose_name = "Demo shop"

    def ready(self) -> None:
        # Registers the demo tools' python executors, reconcile hooks and state readers.
        from . import tools  # noqa: F401
