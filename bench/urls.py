"""The URLs of the benchmark's server: the project's, plus the bench's own baseline view."""

from django.urls import path

from toolhub.urls import handler404
from toolhub.urls import urlpatterns as toolhub_urlpatterns

from .views import bare_order_refunds

urlpatterns = [
    path("bench/orders/<str:order_id>/refunds", bare_order_refunds, name="bench-order-refunds"),
    *toolhub_urlpatterns,
]

__all__ = ["handler404", "urlpatterns"]
