from django.urls import path

from .views import CredentialSubjectApi

urlpatterns = [
    path(
        "credentials/<str:name>/subjects/<str:subject>", CredentialSubjectApi.as_view(),
        name="credential-subject",
    ),
]
