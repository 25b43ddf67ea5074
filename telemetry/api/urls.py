"""REST API of GPU telemetry, mounted at /api/telemetry/ (namespace `api:telemetry`)."""

from django.urls import re_path

from telemetry.api import views

app_name = "telemetry"

urlpatterns = [
    re_path(r"^observation3/?$", views.Observation3View.as_view(), name="observation3"),
    re_path(r"^idle-gpus/?$", views.IdleGpusView.as_view(), name="idle-gpus"),
    re_path(
        r"^jobs/(?P<job_id>[0-9A-Za-z_.+-]+)/utilisation/?$",
        views.JobUtilisationView.as_view(),
        name="job-utilisation",
    ),
]
