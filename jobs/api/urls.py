"""REST API of the jobs app, mounted at /api/jobs/ (namespace `api:jobs`)."""

app_name = "jobs"

urlpatterns: list = []
