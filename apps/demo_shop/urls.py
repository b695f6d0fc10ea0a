"""The demo external systems, mounted at /demo/."""

from django.urls import path

from .views import RefundsView

urlpatterns = [
    path("payments/refunds", RefundsView.as_view(), name="demo-payments-refunds"),
]
