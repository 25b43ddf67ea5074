"""Serve the portal for the demo: HTTP + websockets, and in the embedded mode the periodic tasks.

In the embedded mode (no REDIS_URL) there is no Celery beat or worker: this starts the periodic
tasks in a child process (portal/scheduler.py) and hands the events it sends to the in-memory
channel layer, which lives in this process. With REDIS_URL set, scripts/demo-run starts a real
Celery worker and beat instead and this only serves.
"""

import asyncio
import logging

from django.conf import settings
from django.core.management.base import BaseCommand

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Serve the portal on HOST:PORT with daphne as production runs it (portal/serve.py), "
        "and in-process periodic tasks."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, **options):
        from portal.asgi import application
        from portal.serve import PortalServer

        periodic = []

        def start_periodic_tasks(*_args, **_kwargs):
            if not settings.CELERY_TASK_ALWAYS_EAGER:
                return
            from channels.layers import get_channel_layer

            from portal.scheduler import PeriodicProcess

            loop = asyncio.get_event_loop()
            layer = get_channel_layer()

            def deliver(group: str, message: dict) -> None:
                # From the relay thread onto the loop that owns the in-memory layer.
                asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop).result(
                    timeout=5
                )

            process = PeriodicProcess(deliver)
            process.start()
            periodic.append(process)

        endpoint = f"tcp:port={options['port']}:interface={options['host']}"
        self.stdout.write(f"Serving on http://{options['host']}:{options['port']}/")
        PortalServer(
            application=application,
            endpoints=[endpoint],
            ready_callable=start_periodic_tasks,
            signal_handlers=True,
        ).run()
        for process in periodic:
            process.stop()
