"""The demo external systems, mounted at /demo/."""

from django.urls import path

from .api.views import OrderCancelApi, OrderSearchApi
from .views import OrderRefundsView, RefundsView, openapi_document_view

urlpatterns = [
    path("openapi.json", openapi_document_view, name="demo-openapi"),
    path("payments/refunds", RefundsView.as_view(), name="demo-payments-refunds"),
    path("payments/orders/<str:order_id>/refunds", OrderRefundsView.as_view(),
         name="demo-payments-order-refunds"),
    path("orders/search", OrderSearchApi.as_view(), name="demo-orders-search"),
    path("orders/cancel", OrderCancelApi.as_view(), name="demo-orders-cancel"),
]
