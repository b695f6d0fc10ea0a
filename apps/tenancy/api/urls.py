from django.urls import path

from .views import SessionCreateApi

urlpatterns = [
    path("sessions", SessionCreateApi.as_view(), name="session-create"),
]
