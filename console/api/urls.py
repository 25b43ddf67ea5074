from django.urls import path

from console.api import views

app_name = "console"

urlpatterns = [
    path("", views.ImpactView.as_view(), name="impact"),
]
