"""REST API of the fabric app, mounted at /api/fabric/ (namespace `api:fabric`)."""

from django.urls import include, path

app_name = "fabric"

urlpatterns = [
    path("", include("fabric.api.monitoring_urls")),
    path("", include("fabric.api.action_urls")),
]
