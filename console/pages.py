"""The console's pages that keep their un-namespaced names (`dashboard`, `tenant-detail`, ...):
mounted at the site's root by portal/urls.py, which names no domain app itself."""

from django.urls import path

from console import tenant_views, views

urlpatterns = [
    path("", views.DashboardView.as_view(), name="dashboard"),
    path("tenants/<slug:slug>/", tenant_views.TenantDetailView.as_view(), name="tenant-detail"),
    path(
        "tenants/<slug:slug>/allocations.csv",
        tenant_views.TenantAllocationsCsvView.as_view(),
        name="tenant-allocations-csv",
    ),
    path(
        "tenants/<slug:slug>/usage.csv",
        tenant_views.TenantUsageCsvView.as_view(),
        name="tenant-usage-csv",
    ),
    path(
        "tenants/<slug:slug>/allocations/<int:pk>/end/",
        tenant_views.AllocationEndView.as_view(),
        name="allocation-end",
    ),
]
