from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabric"

    def ready(self) -> None:
        from fabric.realtime import register_fabric_groups

        register_fabric_groups()
