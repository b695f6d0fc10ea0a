from django.apps import AppConfig


class DemoShopConfig(AppConfig):
    name = "apps.demo_shop"
    label = "demo_shop"
    verbose_name = "Demo shop"
