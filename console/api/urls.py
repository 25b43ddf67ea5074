"""The console's API endpoints (namespace `console`), mounted at /api/ by portal/api/urls.py."""

from django.urls import path

from console.api import views
from console.api.search import SearchView

app_name = "console"

urlpatterns = [
    path("impact/", views.ImpactView.as_view(), name="impact"),
    path("search/", SearchView.as_view(), name="search"),
]
