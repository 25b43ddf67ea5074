"""The console's API endpoints, mounted at /api/ by portal/api/urls.py."""

from django.urls import path

from console.api.search import SearchView

urlpatterns = [
    path("search/", SearchView.as_view(), name="search"),
]
