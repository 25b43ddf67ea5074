"""Sign-in against the site's LDAP directory (django-auth-ldap), with the portal's role mapping.

django-auth-ldap binds as the person (after finding their DN with the bind account), reads
their groups and creates or updates the local account (django_auth_ldap/backend.py,
`_LDAPUser.authenticate` -> `_get_or_create_user`). Two hooks of its `LDAPBackend` are used:
`get_or_build_user` runs after the password was accepted and before any account is written,
so a refusal leaves no account behind; `authenticate_ldap_user` gets the saved account and
gives it the role and tenant of this sign-in.
"""

from __future__ import annotations

import ldap
from django.conf import settings
from django.dispatch import receiver
from django_auth_ldap.backend import LDAPBackend, ldap_error

from portal.identity.mapping import SignInRefused, resolve_grant
from portal.identity.refusals import REQUEST_ATTRIBUTE, note_refusal
from portal.models import AccountSource, User
from portal.services.accounts import user_apply_directory_grant


class DirectoryBackend(LDAPBackend):
    def get_or_build_user(self, username, ldap_user):
        existing = User.objects.filter(username__iexact=username).first()
        if existing is not None and existing.source == AccountSource.LOCAL:
            # A break-glass local account is never taken over by a directory entry of the same
            # name; its own password (the next backend) still works.
            raise ldap_user.AuthenticationFailed(f"{username} is a local account")
        try:
            ldap_user.portal_grant = resolve_grant(
                groups=ldap_user.group_dns,
                role_groups=settings.LDAP_ROLE_GROUPS,
                tenant_groups=settings.LDAP_TENANT_GROUPS,
                disabled_group=settings.LDAP_DISABLED_GROUP,
            )
        except SignInRefused as refusal:
            note_refusal(ldap_user._request, username=username, method="directory", reason=refusal)
            raise ldap_user.AuthenticationFailed(str(refusal)) from None
        return super().get_or_build_user(username, ldap_user)

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        grant = ldap_user.portal_grant
        return user_apply_directory_grant(
            user=user, role=grant.role, tenant=grant.tenant, source=AccountSource.DIRECTORY
        )


@receiver(ldap_error, sender=DirectoryBackend, dispatch_uid="portal.identity.ldap.unreachable")
def say_the_directory_is_unreachable(sender, context, request, exception, **kwargs):
    """django-auth-ldap turns a directory it cannot reach into "no" (`_report_error`); the
    login page should not then blame the person's password."""
    if request is not None and isinstance(exception, ldap.SERVER_DOWN | ldap.TIMEOUT):
        setattr(
            request,
            REQUEST_ATTRIBUTE,
            "The directory cannot be reached, so directory accounts cannot sign in right now. "
            "Try again shortly; administrators can use a local account.",
        )
