"""The demo external systems, mounted at /demo/."""

from django.urls import path

from .api.views import OrderCancelApi, OrderSearchApi
from .views import RefundsView

urlpatterns = [
    path("payments/refunds", RefundsView.as_view(), name="demo-payments-refunds"),
    path("orders/search", OrderSearchApi.as_view(), name="demo-orders-search"),
    path("orders/cancel", OrderCancelApi.as_view(), name="demo-orders-cancel"),
]
