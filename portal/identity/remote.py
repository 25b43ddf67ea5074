"""Single sign-on behind a reverse proxy: the proxy authenticates and names the person in a
header (REMOTE_AUTH_HEADER), with their groups in another (REMOTE_AUTH_GROUP_HEADER).

Modelled on NetBox's remote authentication (netbox/netbox/middleware.py `RemoteUserMiddleware`,
netbox/netbox/authentication/__init__.py `RemoteUserBackend`), which trusts the header from
whoever sends it; here the header counts only from REMOTE_AUTH_TRUSTED_PROXIES. The check reads
REMOTE_ADDR, the address of the peer that connected, so daphne must run WITHOUT
--proxy-headers in this mode (that option would put a client-supplied X-Forwarded-For there).
"""

from __future__ import annotations

import ipaddress
import logging

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware
from django.shortcuts import render

from portal.identity.mapping import SignInRefused, resolve_grant
from portal.identity.refusals import note_refusal, refusal_of, request_address
from portal.models import AccountSource, User
from portal.services.accounts import user_apply_directory_grant
from portal.services.audit import record_sign_in

logger = logging.getLogger(__name__)


def from_trusted_proxy(request) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in settings.REMOTE_AUTH_TRUSTED_PROXIES)


def header_groups(request) -> list[str]:
    raw = request.META.get(settings.REMOTE_AUTH_GROUP_HEADER, "")
    return [
        group.strip() for group in raw.split(settings.REMOTE_AUTH_GROUP_SEPARATOR) if group.strip()
    ]


class ProxyUserBackend(RemoteUserBackend):
    """The account the proxy names, with the role and tenant its groups header maps to."""

    def authenticate(self, request, remote_user):
        if not remote_user or request is None:
            return None
        username = self.clean_username(remote_user)
        existing = User.objects.filter(username=username).first()
        if existing is not None and existing.source == AccountSource.LOCAL:
            note_refusal(
                request,
                username=username,
                method="proxy",
                reason=f"{username} is a local account of the portal: sign in with its password.",
            )
            return None
        if existing is None and not settings.REMOTE_AUTH_AUTO_CREATE_USER:
            note_refusal(
                request,
                username=username,
                method="proxy",
                reason=f"The portal has no account {username!r} and does not create accounts "
                "on sign-on (REMOTE_AUTH_AUTO_CREATE_USER is off). Ask an administrator.",
            )
            return None
        try:
            grant = resolve_grant(
                groups=header_groups(request),
                role_groups=settings.REMOTE_AUTH_ROLE_GROUPS,
                tenant_groups=settings.REMOTE_AUTH_TENANT_GROUPS,
                default_role=settings.REMOTE_AUTH_DEFAULT_ROLE,
            )
        except SignInRefused as refusal:
            note_refusal(request, username=username, method="proxy", reason=refusal)
            return None
        user = existing or User(username=username)
        if existing is None:
            user.set_unusable_password()
        user = user_apply_directory_grant(
            user=user, role=grant.role, tenant=grant.tenant, source=AccountSource.PROXY
        )
        request.proxy_sign_in = True
        return user if self.user_can_authenticate(user) else None


class TrustedProxyRemoteUserMiddleware(RemoteUserMiddleware):
    # Django's async path reads a different META key ("HTTP_" + header); one path, the sync one.
    async_capable = False

    def __init__(self, get_response):
        super().__init__(get_response)
        self.header = settings.REMOTE_AUTH_HEADER

    def __call__(self, request):
        refused = self.process_request(request)
        return refused or self.get_response(request)

    def process_request(self, request):
        if self.header in request.META and not from_trusted_proxy(request):
            # Anyone who reaches the portal directly could send the header: ignore it, as if
            # absent (which also ends a session an earlier header opened).
            logger.warning(
                "ignored %s from %s: not in REMOTE_AUTH_TRUSTED_PROXIES",
                self.header,
                request_address(request),
            )
            del request.META[self.header]
            request.META.pop(settings.REMOTE_AUTH_GROUP_HEADER, None)
        super().process_request(request)
        if getattr(request, "proxy_sign_in", False) and request.user.is_authenticated:
            record_sign_in(user=request.user, method="proxy", address=request_address(request))
        if self.header in request.META and not request.user.is_authenticated:
            reason = refusal_of(request) or "This account cannot sign in to the portal."
            return render(
                request, "registration/sign_in_refused.html", {"reason": reason}, status=403
            )
        return None
