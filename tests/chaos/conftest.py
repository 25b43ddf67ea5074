"""Fixtures of the chaos tests (helpers in tests/chaos/support.py)."""

from __future__ import annotations

import os

import pytest

from portal.models import Role
from portal.services.accounts import api_token_create
from tests.chaos.support import Stack


@pytest.fixture
def stack(transactional_db, settings):
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") or not os.environ.get(
        "REDIS_URL"
    ):
        pytest.fail("chaos tests need DATABASE_URL (PostgreSQL) and REDIS_URL: run `make test`")
    from portal.celery import app

    app.control.purge()  # messages of earlier tests name rows that no longer exist
    # The Actions this process queues are the stack's to run (its workers', or its requesting
    # process's): they carry the fault's environment, this process does not.
    settings.ACTION_RUNNER_THREADS = 0
    processes = Stack(settings.DATABASES["default"]["NAME"], env={})
    yield processes
    processes.stop()


@pytest.fixture
def operator_token(make_user) -> str:
    _, key = api_token_create(user=make_user(Role.OPERATOR), name="chaos")
    return key
