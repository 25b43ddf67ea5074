"""Pages of the jobs app (namespace `jobs`)."""

from django.urls import path, re_path

from jobs import analytics_views, views

app_name = "jobs"

urlpatterns = [
    path("", views.JobListView.as_view(), name="job-list"),
    path("analytics/", analytics_views.JobAnalyticsView.as_view(), name="analytics"),
    path("nodes/drain/", views.NodeDrainFormView.as_view(), name="node-drain"),
    path("nodes/resume/", views.NodeResumeFormView.as_view(), name="node-resume"),
    path(
        "nodes/cancel-reboot/", views.NodeCancelRebootFormView.as_view(), name="node-cancel-reboot"
    ),
    path("nodes/bulk-drain/", views.BulkDrainPageView.as_view(), name="bulk-drain"),
    path("nodes/<str:hostname>/slurm/", views.NodeSlurmPanelView.as_view(), name="node-panel"),
    re_path(r"^(?P<job_id>[0-9A-Za-z_.+-]+)/$", views.JobDetailView.as_view(), name="job-detail"),
]
