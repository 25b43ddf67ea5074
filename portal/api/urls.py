"""The API's URL conf: /api/<resource>/ for the portal, /api/<app>/ for each domain app."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from portal.api import views

app_name = "api"

router = DefaultRouter(trailing_slash="/?")
router.register("actions", views.ActionViewSet, basename="action")
router.register("audit", views.AuditEntryViewSet, basename="auditentry")
router.register("tenants", views.TenantViewSet, basename="tenant")
router.register("tokens", views.APITokenViewSet, basename="apitoken")

urlpatterns = [
    path("me/", views.MeView.as_view(), name="me"),
    path("inventory/", include("inventory.api.urls")),
    path("jobs/", include("jobs.api.urls")),
    path("fabric/", include("fabric.api.urls")),
    path("faults/", include("faults.api.urls")),
    path("telemetry/", include("telemetry.api.urls")),
    path("", include("console.api.urls")),
    *router.urls,
]
