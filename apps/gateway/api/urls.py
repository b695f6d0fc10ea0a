from django.urls import path

from .views import ExecutionDetailApi, InvokeApi, InvokeBatchApi

urlpatterns = [
    path("invoke", InvokeApi.as_view(), name="invoke"),
    path("invoke/batch", InvokeBatchApi.as_view(), name="invoke-batch"),
    path("executions/<uuid:execution_id>", ExecutionDetailApi.as_view(), name="execution-detail"),
]
