"""The embedded default's beat and worker for periodic tasks: a process of its own.

Production runs the beat schedule through Celery (beat + workers). The embedded default
(`make demo` without REDIS_URL) has no broker, and its periodic tasks used to run as threads of
the web process: at scale 20 a fabric poll (minutes of CPU-bound parsing) held the interpreter
while the dashboard waited 15 s for a turn. Here they run in a child process of the web server,
at a lower CPU priority, with at most CONCURRENCY tasks running at once; each schedule entry runs
on its own timer, and a run that overran its interval makes the missed starts be skipped and
logged rather than piled up (and NonOverlappingTask counts it for the dashboard).

The child's events still reach the browsers: the in-memory channel layer lives in the web
process, so the child sends each event down a pipe and the web process hands it to that layer
(portal/realtime/events.py `forward_events`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

logger = logging.getLogger(__name__)

CONCURRENCY = 2
# Below the web server's priority, so a request is served before the periodic work goes on.
NICENESS = 5
RESTART_DELAY_SECONDS = 5.0


class Schedule:
    """Runs each (name, interval, run) entry on its own timer, CONCURRENCY at a time."""

    def __init__(self, entries: list[tuple[str, float, Callable[[], object]]], concurrency: int):
        self.entries = entries
        self.slots = threading.BoundedSemaphore(concurrency)
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.skipped: dict[str, int] = {}

    def start(self) -> None:
        for name, interval, run in self.entries:
            thread = threading.Thread(
                target=self._run_every, args=(name, interval, run), name=name, daemon=True
            )
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self.stopping.set()

    def _run_every(self, name: str, interval: float, run: Callable[[], object]) -> None:
        due = time.monotonic() + interval
        while not self.stopping.wait(max(0.0, due - time.monotonic())):
            with self.slots:
                try:
                    run()
                except Exception:
                    logger.exception("periodic task %s failed", name)
            now = time.monotonic()
            due += interval
            if due <= now:
                # The run overran: the starts it covered are dropped, not run back to back.
                missed = int((now - due) // interval) + 1
                self.skipped[name] = self.skipped.get(name, 0) + missed
                logger.warning(
                    "periodic task %s overran its %.0f s interval: %d start(s) skipped",
                    name,
                    interval,
                    missed,
                )
                due += missed * interval


def beat_entries() -> list[tuple[str, float, Callable[[], object]]]:
    """The beat schedule as (name, interval, run) with each run applying the task here."""
    from django.conf import settings

    from portal.celery import app

    app.loader.import_default_modules()  # autodiscovery of tasks is lazy
    from portal.periodic import BEAT_HEADER

    entries = []
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        task = app.tasks[entry["task"]]
        run = functools.partial(task.apply, headers={BEAT_HEADER: True})
        entries.append((name, float(entry["schedule"]), run))
    return entries


def _child_main(events: Connection) -> None:
    import django

    django.setup()
    from portal.realtime.events import forward_events

    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    forward_events(events)
    schedule = Schedule(beat_entries(), CONCURRENCY)
    schedule.start()
    # The child lives as long as the web process: its end of the pipe closing means that.
    try:
        events.poll(None)
        events.recv()
    except (EOFError, OSError):
        pass
    schedule.stop()


class PeriodicProcess:
    """Starts the child, hands its events to `deliver`, and restarts it if it dies."""

    def __init__(self, deliver: Callable[[str, dict], None]):
        self.deliver = deliver
        self.stopping = threading.Event()
        self.process: multiprocessing.Process | None = None
        self.supervisor = threading.Thread(
            target=self._supervise, name="periodic-supervisor", daemon=True
        )

    def start(self) -> None:
        self.supervisor.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.process is not None and self.process.is_alive():
            self.process.terminate()

    def _supervise(self) -> None:
        # spawn, not fork: the web process runs an event loop and threads a fork would copy.
        context = multiprocessing.get_context("spawn")
        while not self.stopping.is_set():
            ours, theirs = context.Pipe()
            self.process = context.Process(
                target=_child_main, args=(theirs,), name="portal-periodic", daemon=True
            )
            self.process.start()
            theirs.close()
            logger.info("periodic tasks run in process %s", self.process.pid)
            self._relay(ours)
            self.process.join(timeout=5)
            if not self.stopping.is_set():
                logger.error(
                    "the periodic task process exited (%s); restarting in %.0f s",
                    self.process.exitcode,
                    RESTART_DELAY_SECONDS,
                )
                self.stopping.wait(RESTART_DELAY_SECONDS)

    def _relay(self, connection: Connection) -> None:
        while True:
            try:
                group, message = connection.recv()
            except (EOFError, OSError):
                return
            try:
                self.deliver(group, message)
            except Exception:
                logger.exception("could not deliver %s", message.get("event"))
