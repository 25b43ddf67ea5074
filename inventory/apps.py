from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"

    def ready(self):
        from inventory.bmc import action_handlers  # noqa: F401 - registers the power handler
        from inventory.revision import connect_signals

        connect_signals(self)
