from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Pages and endpoints that compose several domain apps (DESIGN.md section 2)."""

    name = "console"
