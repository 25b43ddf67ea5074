"""Serve the portal for the demo: HTTP + websockets, and the periodic tasks in the same process.

In the embedded mode (no REDIS_URL) the channel layer lives in this process's memory, so the
periodic tasks must run here too for their events to reach browsers. With REDIS_URL set, the
Makefile starts a real Celery worker and beat instead and this only serves.
"""

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.management.base import BaseCommand

logger = logging.getLogger(__name__)


async def run_periodically(name: str, task, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            await sync_to_async(task.apply, thread_sensitive=False)()
        except Exception:
            logger.exception("periodic task %s failed", name)


class Command(BaseCommand):
    help = "Serve the portal on HOST:PORT with daphne (and in-process periodic tasks)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, **options):
        from daphne.server import Server

        from portal.asgi import application
        from portal.celery import app

        periodic_tasks = set()  # keep references: the loop holds tasks only weakly

        def start_periodic_tasks(*_args, **_kwargs):
            if not settings.CELERY_TASK_ALWAYS_EAGER:
                return
            app.loader.import_default_modules()  # autodiscovery of tasks is lazy
            loop = asyncio.get_event_loop()
            for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
                task = app.tasks[entry["task"]]
                periodic_tasks.add(
                    loop.create_task(run_periodically(name, task, float(entry["schedule"])))
                )

        endpoint = f"tcp:port={options['port']}:interface={options['host']}"
        self.stdout.write(f"Serving on http://{options['host']}:{options['port']}/")
        Server(
            application=application,
            endpoints=[endpoint],
            ready_callable=start_periodic_tasks,
            signal_handlers=True,
        ).run()
