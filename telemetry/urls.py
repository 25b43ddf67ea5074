"""Pages of the telemetry app (namespace `telemetry`)."""

from django.urls import path

from telemetry import views

app_name = "telemetry"

urlpatterns = [
    path("idle-gpus/", views.IdleGpusView.as_view(), name="idle-gpus"),
]
