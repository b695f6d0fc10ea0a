from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from apps.common.views import favicon
from apps.gateway.api.mcp import McpView
from toolhub.views import healthz, metrics, readyz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("apps.gateway.api.urls")),
    path("api/v1/", include("apps.tenancy.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("mcp", McpView.as_view(), name="mcp"),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
]

if settings.TOOLHUB_DEMO_ENABLED:
    urlpatterns.append(path("demo/", include("apps.demo_shop.urls")))

handler404 = "apps.common.views.not_found"
