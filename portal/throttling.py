"""Brakes on the API: per-address budgets for anonymous requests and for failed authentication.

Authenticated use is not throttled unless API_THROTTLE_USER_RATE is set: automation and the
pages' own requests are many and legitimate. What is braked is what an attacker or a broken
script produces: requests without credentials, and credentials that do not work (a wrong or
revoked token). Past its budget an address gets 429 with Retry-After, and while it is over
the failed-authentication budget not even a correct token is looked at, so guessing keys is
no faster than the budget allows.

Budgets live in the default cache (Redis in production, so every web process shares them).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from rest_framework import exceptions
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

UNKNOWN_ADDRESS = "unknown"


def client_address(remote_addr: str | None, forwarded_for: str | None) -> str:
    """The client's address, trusting X-Forwarded-For only as far as TRUSTED_PROXY_COUNT says.

    Each trusted proxy appends the address it saw, so with N proxies the client is the N-th
    entry from the right; anything left of it was written by the client and is not believed.
    """
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies and forwarded_for:
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return remote_addr or UNKNOWN_ADDRESS


def request_client_address(request) -> str:
    """The client address of a Django or DRF request."""
    return client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def login_client_address(request) -> str | None:
    """The same address for django-axes (AXES_CLIENT_IP_CALLABLE), which stores it as an IP
    address: None when there is none (a request built on the server) or it is not one."""
    address = request_client_address(request)
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


class AddressRateThrottle(SimpleRateThrottle):
    """A budget per client address; rates are read when used, so settings overrides apply."""

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_ident(self, request):
        return request_client_address(request)

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class AnonymousRateThrottle(AddressRateThrottle):
    """Requests without credentials: the schema, and every request the API refuses with 401."""

    scope = "anon"

    def get_cache_key(self, request, view):
        if request.user and request.user.is_authenticated:
            return None
        return super().get_cache_key(request, view)


class AuthenticatedRateThrottle(AddressRateThrottle):
    """Per user; off unless API_THROTTLE_USER_RATE is set."""

    scope = "user"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class FailedAuthenticationThrottle(AddressRateThrottle):
    """Counts only failures (recorded by the token authentication), not every request."""

    scope = "failed_auth"

    def remaining_wait(self, request) -> float | None:
        """Seconds until this address may try credentials again, or None when it may now."""
        if self.rate is None:
            return None
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        if len(self.history) < self.num_requests:
            return None
        return max(self.wait() or 0.0, 1.0)

    def record_failure(self, request) -> None:
        if self.rate is None:
            return
        if self.remaining_wait(request) is None:
            self.throttle_success()  # appends now to the history: one more failure counted


def refuse_if_over_failed_authentication_budget(request) -> None:
    wait = FailedAuthenticationThrottle().remaining_wait(request)
    if wait is not None:
        raise exceptions.Throttled(
            wait=wait, detail="Too many failed authentication attempts from your address."
        )


def record_failed_authentication(request) -> None:
    FailedAuthenticationThrottle().record_failure(request)


def refuse_if_over_anonymous_budget(request, view) -> None:
    """Counts an anonymous request the API is about to refuse, and answers 429 past the budget.

    DRF checks throttles only after permissions, so a request refused with 401 would never be
    counted; the permission class calls this first.
    """
    throttle = AnonymousRateThrottle()
    if not throttle.allow_request(request, view):
        raise exceptions.Throttled(wait=max(throttle.wait() or 0.0, 1.0))


def forget_client_address(address: str) -> None:
    """Give an address its full budgets back (an operator unblocking a host; tests)."""
    from django.core.cache import cache

    cache.delete_many(
        [
            SimpleRateThrottle.cache_format % {"scope": scope, "ident": address}
            for scope in (AnonymousRateThrottle.scope, FailedAuthenticationThrottle.scope)
        ]
    )
