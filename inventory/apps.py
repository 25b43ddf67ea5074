from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"

    def ready(self):
        from inventory.bmc import action_handlers  # noqa: F401 - registers the power handler
        from inventory.revision import connect_signals

        connect_signals(self)

        from django.db.backends.signals import connection_created

        from inventory.models.natural_sort import register_on_sqlite_connections

        # The natural sort keys' generated columns call this function (SQLite: per connection).
        connection_created.connect(register_on_sqlite_connections)
