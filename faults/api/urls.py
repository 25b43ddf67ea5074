"""REST API of the faults app, mounted at /api/faults/ (namespace `api:faults`)."""

app_name = "faults"

urlpatterns: list = []
