"""The login page: says why the directory's answer was not enough, and audits each sign-in."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from portal.identity.refusals import refusal_of, request_address
from portal.services.audit import record_sign_in

# The `backend` path django.contrib.auth.login() stores on the user, in the audit's words.
SIGN_IN_METHODS = {
    "portal.identity.ldap.DirectoryBackend": "directory",
    "portal.identity.remote.ProxyUserBackend": "proxy",
}


def sign_in_method(user) -> str:
    return SIGN_IN_METHODS.get(getattr(user, "backend", ""), "password")


class PortalAuthenticationForm(AuthenticationForm):
    sign_in_refusal = ""

    def get_invalid_login_error(self):
        self.sign_in_refusal = refusal_of(self.request)
        if self.sign_in_refusal:
            return ValidationError(self.sign_in_refusal, code="refused")
        return super().get_invalid_login_error()


class PortalLoginView(auth_views.LoginView):
    authentication_form = PortalAuthenticationForm
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        user = form.get_user()
        record_sign_in(
            user=user, method=sign_in_method(user), address=request_address(self.request)
        )
        return response
