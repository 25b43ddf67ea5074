from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self):
        from django.conf import settings

        from portal import (
            lockout,  # noqa: F401 - audits login lock-outs
            tasks,  # noqa: F401 - registers the tasks that services send by name
        )
        from portal.actions import canary  # noqa: F401 - registers the canary handler
        from portal.actions.registry import import_handler_modules
        from portal.api import schema  # noqa: F401 - documents token auth in OpenAPI
        from portal.realtime.groups import register_portal_groups

        register_portal_groups()
        import_handler_modules(settings.ACTION_HANDLER_MODULES)
