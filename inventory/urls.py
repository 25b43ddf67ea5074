"""Pages of the inventory app (namespace `inventory`)."""

app_name = "inventory"

urlpatterns: list = []
