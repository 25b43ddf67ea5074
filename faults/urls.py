"""Pages of the faults app (namespace `faults`)."""

app_name = "faults"

urlpatterns: list = []
