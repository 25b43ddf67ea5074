"""Filters for the portal's log handlers (settings.LOGGING)."""

from __future__ import annotations

import logging


class ClientErrorsOnOneLine(logging.Filter):
    """A request refused with a 4xx is logged as its one line, without the traceback Django
    attaches to a PermissionDenied or a bad request: the client's mistake, not the server's.
    A 5xx keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status_code = getattr(record, "status_code", None)
        if isinstance(status_code, int) and 400 <= status_code < 500:
            record.exc_info = None
            record.exc_text = None
        return True
