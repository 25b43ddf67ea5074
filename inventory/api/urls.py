"""REST API of the inventory app, mounted at /api/inventory/ (namespace `api:inventory`)."""

app_name = "inventory"

urlpatterns: list = []
