"""A Redis database of its own for each pytest-xdist worker (`make test` runs three).

Loaded with `-p tests.xdist_env` by `make test` (`python -m pytest` puts the checkout on the
path), so it runs when pytest starts, before pytest-django sets Django up: REDIS_URL must be
right before the settings read it, and every process a test starts (daphne, Celery workers, the
demo) inherits it from the environment.
Redis is the only shared service that needs it: each worker already gets a PostgreSQL test
database of its own (pytest-django adds the worker's suffix), and the tests that share the one
Slurm controller, or stop a real service, run in one worker (tests/conftest.py groups them).
Redis's pub/sub ignores database numbers, but channel names carry theirs (CHANNEL_PREFIX).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


def worker_redis_url(url: str, worker: str) -> str:
    """REDIS_URL's database plus the worker's number: redis://host/1 -> /1 for gw0, /3 for gw2."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    number = base + int(worker.removeprefix("gw"))
    if number > 15:
        raise RuntimeError(f"REDIS_URL {url}: worker {worker} would need Redis database {number}")
    return urlunsplit(parts._replace(path=f"/{number}"))


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)
