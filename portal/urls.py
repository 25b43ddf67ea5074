from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from portal import views
from portal.identity.views import PortalLoginView

urlpatterns = [
    # The dashboard and the tenant pages compose every domain app: console/pages.py.
    path("", include("console.pages")),
    path("login/", PortalLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("actions/", views.ActionListView.as_view(), name="action-list"),
    path("actions/<int:pk>/", views.ActionDetailView.as_view(), name="action-detail"),
    path("actions/<int:pk>/cancel/", views.ActionCancelView.as_view(), name="action-cancel"),
    path("audit/", views.AuditListView.as_view(), name="audit-list"),
    path("tenants/", views.TenantListView.as_view(), name="tenant-list"),
    path("inventory/", include("inventory.urls")),
    path("jobs/", include("jobs.urls")),
    path("fabric/", include("fabric.urls")),
    path("faults/", include("faults.urls")),
    path("telemetry/", include("telemetry.urls")),
    path("", include("console.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: our CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("portal.api.urls")),
    path("admin/", admin.site.urls),
]

handler404 = "portal.views.page_not_found"
handler500 = "portal.views.server_error"
