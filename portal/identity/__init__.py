"""Signing in through the site's directory (LDAP) or a single sign-on proxy (remote-user header).

Both map the directory's groups to one portal role and at most one tenant (`mapping.py`), apply
them to the local account at every sign-in (so a group change takes effect at the next login),
and audit the sign-in; local accounts (`create_portal_user`) keep working beside them for
break-glass administrators.
"""
