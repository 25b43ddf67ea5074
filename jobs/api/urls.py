"""REST API of the jobs app, mounted at /api/jobs/ (namespace `api:jobs`)."""

from django.urls import re_path
from rest_framework.routers import DefaultRouter

from jobs.api import analytics_views, views

app_name = "jobs"

router = DefaultRouter(trailing_slash="/?")
router.include_root_view = False
router.register("jobs", views.JobViewSet, basename="job")

urlpatterns = [
    re_path(r"^analytics/?$", analytics_views.JobAnalyticsView.as_view(), name="analytics"),
    re_path(r"^nodes/drain/?$", views.NodeDrainView.as_view(), name="node-drain"),
    re_path(r"^nodes/resume/?$", views.NodeResumeView.as_view(), name="node-resume"),
    re_path(r"^nodes/reboot/?$", views.NodeRebootView.as_view(), name="node-reboot"),
    re_path(
        r"^nodes/cancel-reboot/?$", views.NodeCancelRebootView.as_view(), name="node-cancel-reboot"
    ),
    *router.urls,
]
