"""Pages of the console app (namespace `console`)."""

from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("search/", views.SearchPageView.as_view(), name="search"),
]
