"""apps.demo_shop owns the demo external system (orders and a payments provider, with their
tools, and the shipping MCP server in shipping/) used by the demo and the tests.

May import: any app (the top of the layers contract, pyproject.toml). No app imports it;
toolhub/urls.py mounts it only when the demo is enabled.
"""

from django.apps import AppConfig


class DemoShopConfig(AppConfig):
    name = "apps.demo_shop"
    label = "demo_shop"
    verbose_name = "Demo shop"

    def ready(self) -> None:
        # Registers the demo tools' python executors, reconcile hooks and state readers.
        from . import tools  # noqa: F401
