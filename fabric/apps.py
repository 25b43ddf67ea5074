from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"

    def ready(self):
        from fabric import actions  # noqa: F401 - registers the switch Action handlers
