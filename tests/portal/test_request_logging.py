"""A client's error is one log line: 403s and other 4xx carry no traceback (issue 29 finding 7).

Django logs a PermissionDenied (a page a role may not see) as a WARNING with the exception's
whole traceback: a user clicking around wrote thirty lines per refusal. Server errors keep it.
"""

from __future__ import annotations

import io
import logging

import pytest
from django.test import Client

from portal.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def console_log():
    """What the portal's configured console handler (settings.LOGGING) writes."""
    handler = next(
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, logging.StreamHandler) and handler.get_name() == "console"
    )
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(previous)


def test_a_forbidden_page_is_logged_as_one_line_without_a_traceback(make_user, console_log):
    client = Client()
    client.force_login(make_user(Role.VIEWER))
    assert client.get("/audit/").status_code == 403
    logged = console_log.getvalue()
    refusal = logged[logged.index("WARNING django.request: Forbidden") :].strip()
    assert refusal.endswith("WARNING django.request: Forbidden (Permission denied): /audit/")
    assert "\n" not in refusal and "Traceback" not in logged


def test_a_server_error_keeps_its_traceback(console_log):
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("django.request").error(
            "Internal Server Error: /x", exc_info=True, extra={"status_code": 500}
        )
    assert "Traceback" in console_log.getvalue() and "RuntimeError: boom" in console_log.getvalue()
