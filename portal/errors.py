"""Errors that services raise; the API turns them into 4xx responses naming the problem.

Services stay free of HTTP: they raise these, and `portal.api.exceptions` maps them.
"""

from __future__ import annotations


class ServiceError(Exception):
    status_code = 400

    def __init__(self, detail: str | dict, **extra):
        super().__init__(detail if isinstance(detail, str) else str(detail))
        self.detail = detail
        self.extra = extra


class InvalidInput(ServiceError):
    """Bad input; `detail` is a dict of field name -> message list, or a message."""

    status_code = 400


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    """The request is understood but clashes with the current state (e.g. an illegal transition)."""

    status_code = 409


class PayloadTooLarge(ServiceError):
    """A request body past the size its content type allows."""

    status_code = 413
