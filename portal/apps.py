from django.apps import AppConfig
from django.db.models.signals import post_migrate


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
        # The role groups are rows a data migration made: a database flush (as transactional
        # tests end) removes them and only post_migrate runs again, so it makes them again.
        post_migrate.connect(_role_groups_after_migrate, sender=self)


def _role_groups_after_migrate(sender, using, **kwargs):
    from portal.roles import Role

    Group = sender.apps.get_model("auth", "Group")
    for role in Role:
        Group.objects.using(using).get_or_create(name=role.value)
