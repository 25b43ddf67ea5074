"""Pages of the fabric app (namespace `fabric`): monitoring pages and switch-action pages."""

from django.urls import include, path

app_name = "fabric"

urlpatterns = [
    path("", include("fabric.views.monitoring_urls")),
    path("", include("fabric.views.action_urls")),
]
