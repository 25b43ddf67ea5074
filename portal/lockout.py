"""Login lock-out (django-axes): the backend that refuses, the page that says so, the audit entry.

Settings (portal/settings.py, from LOGIN_FAILURE_LIMIT, LOGIN_COOLOFF_MINUTES, LOGIN_LOCKOUT_BY):
after the limit of failed logins, the username (from that address, by default) is refused
until the cool-down has passed, even with the right password. A successful login clears the
count. API tokens are braked separately (portal/throttling.py).
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.dispatch import receiver
from django.shortcuts import render
from django.utils import timezone
from django.utils.crypto import salted_hmac

from portal.services.audit import record_login_lockout


class LoginLockoutBackend(AxesStandaloneBackend):
    """Refuses a locked-out login before any password is checked.

    A login without a request (Django's test client `login()`, code on the server) cannot be
    a brute force over HTTP and has no client address to count against, so it is left to the
    next backend instead of raising as django-axes does.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


UNKNOWN_USER_PREFIX = "unknown-user:"


def lockout_username(request, credentials=None) -> str | None:
    """The username the lock-out records keep (AXES_USERNAME_CALLABLE): the name typed, when it
    names a user; otherwise a keyed digest of it.

    People type their password into the username field: django-axes would keep it in clear in
    its attempts and failure log (shown in the admin) and the audit entry would name it. A
    digest keyed with SECRET_KEY still counts the same string's failures together and cannot
    be reversed by guessing without the key.
    """
    typed = (credentials or {}).get("username")
    if typed is None:
        typed = request.POST.get("username") if request is not None else None
    if not typed:
        return typed
    if get_user_model()._default_manager.filter(username=typed).exists():
        return typed
    digest = salted_hmac("portal.lockout.unknown-username", typed, algorithm="sha256")
    return f"{UNKNOWN_USER_PREFIX}{digest.hexdigest()[:20]}"


def cool_off_minutes() -> int:
    return max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_response(request, original_response=None, credentials=None):
    """The login page again, saying why and for how long, as 429 with Retry-After."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    form = AuthenticationForm(request, initial={"username": username})
    response = render(
        request,
        "registration/login.html",
        {
            "form": form,
            "locked_out": True,
            "cool_off_minutes": cool_off_minutes(),
            "next": request.POST.get("next") or request.GET.get("next", ""),
        },
        status=429,
    )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response


@receiver(user_locked_out, dispatch_uid="portal.lockout.audit")
def audit_lockout(sender, request, username, ip_address, **kwargs):
    """One audit entry per lock-out.

    django-axes sends this signal again for every attempt refused while locked out; only the
    attempt that reached the limit was counted (axes_failures_since_start is set then).
    """
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is None:
        return
    locked_until = timezone.now() + settings.AXES_COOLOFF_TIME
    via = "admin" if request.path.startswith("/admin/") else "ui"
    record_login_lockout(
        username=username or "",
        address=ip_address or "",
        failures=failures,
        locked_until=locked_until,
        via=via,
    )
