"""Pages of the jobs app (namespace `jobs`)."""

app_name = "jobs"

urlpatterns: list = []
