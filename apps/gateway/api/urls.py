from django.urls import path

from .adapters import AnthropicAdapterApi, OpenAIAdapterApi
from .credentials import CredentialSubjectApi
from .tools import ToolListApi
from .views import ExecutionDetailApi, InvokeApi, InvokeBatchApi

urlpatterns = [
    path("invoke", InvokeApi.as_view(), name="invoke"),
    path("invoke/batch", InvokeBatchApi.as_view(), name="invoke-batch"),
    path("executions/<uuid:execution_id>", ExecutionDetailApi.as_view(), name="execution-detail"),
    path("tools", ToolListApi.as_view(), name="tool-list"),
    path("adapters/openai", OpenAIAdapterApi.as_view(), name="adapter-openai"),
    path("adapters/anthropic", AnthropicAdapterApi.as_view(), name="adapter-anthropic"),
    path(
        "credentials/<str:name>/subjects/<str:subject>", CredentialSubjectApi.as_view(),
        name="credential-subject",
    ),
]
