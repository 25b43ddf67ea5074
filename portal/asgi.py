"""ASGI entry point: HTTP through Django, websockets at /ws/ through Channels."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

# Imported after Django is set up: these modules touch models.
from portal.http_handler import SyncChainASGIHandler  # noqa: E402

django_asgi_app = SyncChainASGIHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from portal.realtime.auth import BrowserOrAutomationGate  # noqa: E402
from portal.realtime.consumers import LiveEventsConsumer  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Browsers: Origin checked, then session or token; automation (no Origin): token only.
        "websocket": BrowserOrAutomationGate(
            URLRouter([path("ws/", LiveEventsConsumer.as_asgi())])
        ),
    }
)
