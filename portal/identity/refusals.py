"""A refusal travels on the request from the backend that decided it to the page that says it."""

from __future__ import annotations

from portal.services.audit import record_sign_in_refused

REQUEST_ATTRIBUTE = "sign_in_refusal"


def request_address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "") if request is not None else ""


def note_refusal(request, *, username: str, method: str, reason) -> None:
    """Audit the refusal and keep its reason for the login page (Django's `authenticate()`
    only ever says "no", so the form could not tell a refused person from a wrong password)."""
    record_sign_in_refused(
        username=username, method=method, address=request_address(request), reason=str(reason)
    )
    if request is not None:
        setattr(request, REQUEST_ATTRIBUTE, str(reason))


def refusal_of(request) -> str:
    return getattr(request, REQUEST_ATTRIBUTE, "") if request is not None else ""
