"""Roles as groups, users in at most one tenant, hashed API tokens, the create-user command."""

import io
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from portal.authentication import digest_token_key
from portal.errors import InvalidInput
from portal.models import APIToken, Role, User
from portal.services.accounts import api_token_create, user_create

pytestmark = pytest.mark.django_db


def test_the_data_migration_created_the_five_role_groups(database_after_migrations):
    assert database_after_migrations["groups"] >= {
        "admin",
        "operator",
        "oncall",
        "tenant_admin",
        "viewer",
    }


def test_a_user_has_exactly_one_role(make_user):
    viewer = make_user(Role.VIEWER)
    assert viewer.role == Role.VIEWER
    # get_or_create: a transactional test elsewhere may have flushed the migration's groups.
    viewer.groups.add(Group.objects.get_or_create(name="operator")[0])
    assert User.objects.get(pk=viewer.pk).role is None  # ambiguous: no access
    assert User.objects.create_superuser("root-user", password="x").role == Role.ADMIN


def test_tenant_admins_must_belong_to_a_tenant(tenant_a):
    with pytest.raises(InvalidInput) as error:
        user_create(username="ta", role=Role.TENANT_ADMIN)
    assert "tenant" in error.value.detail
    user = user_create(username="ta", role=Role.TENANT_ADMIN, tenant=tenant_a)
    assert user.tenant == tenant_a


def test_unknown_role_is_refused():
    with pytest.raises(InvalidInput) as error:
        user_create(username="x", role="superhero")
    assert "role" in error.value.detail


def test_tokens_are_stored_only_as_digests(make_user):
    user = make_user(Role.OPERATOR)
    token, key = api_token_create(user=user, name="ansible")
    stored = APIToken.objects.get(pk=token.pk)
    assert stored.key_digest == digest_token_key(key)
    assert key not in {stored.key_digest, stored.prefix, stored.name}
    assert key.startswith(stored.prefix) and len(stored.prefix) < len(key) // 3


def test_token_authenticates_and_stops_working_when_revoked_or_expired(make_user):
    user = make_user(Role.VIEWER)
    token, key = api_token_create(user=user, name="grafana")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    me = client.get("/api/me/")
    assert me.status_code == 200
    assert me.json() == {
        "id": user.pk,
        "username": user.username,
        "email": "",
        "role": "viewer",
        "tenant": None,
    }
    assert APIToken.objects.get(pk=token.pk).last_used_at is not None

    APIToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/me/").status_code == 401
    APIToken.objects.filter(pk=token.pk).update(expires_at=None)
    token.delete()
    response = client.get("/api/me/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_wrong_and_malformed_tokens_get_401():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token gop_not-a-real-key")
    assert client.get("/api/me/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Token two words")
    assert "Malformed" in client.get("/api/me/").json()["detail"]
    assert APIClient().get("/api/me/").status_code == 401


def test_token_api_shows_the_key_once_and_lists_only_prefixes(api_as):
    client = api_as(Role.ONCALL)
    created = client.post("/api/tokens/", {"name": "pager bot"}, format="json")
    assert created.status_code == 201
    key = created.json()["key"]
    listing = client.get("/api/tokens/").json()["results"]
    assert all("key" not in row for row in listing)
    assert key not in str(listing)
    token_id = created.json()["token"]["id"]
    assert client.delete(f"/api/tokens/{token_id}/").status_code == 204
    revoked = APIClient()
    revoked.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert revoked.get("/api/me/").status_code == 401


def test_users_see_only_their_own_tokens_admins_see_all(api_as):
    operator = api_as(Role.OPERATOR)
    viewer = api_as(Role.VIEWER)
    admin = api_as(Role.ADMIN)
    operator_token = operator.get("/api/tokens/").json()["results"][0]["id"]
    assert viewer.get(f"/api/tokens/{operator_token}/").status_code == 404
    assert viewer.delete(f"/api/tokens/{operator_token}/").status_code == 404
    assert admin.get(f"/api/tokens/{operator_token}/").status_code == 200


def test_create_portal_user_command_prints_a_working_token(tenant_a):
    out = io.StringIO()
    call_command(
        "create_portal_user", "alice", "--role", "tenant_admin", "--tenant", "tenant-a", stdout=out
    )
    key = out.getvalue().split("token: ")[1].strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    me = client.get("/api/me/").json()
    assert (me["username"], me["role"], me["tenant"]) == ("alice", "tenant_admin", "tenant-a")


def test_create_portal_user_command_names_bad_options():
    with pytest.raises(CommandError, match="--tenant"):
        call_command("create_portal_user", "bob", "--role", "tenant_admin", "--tenant", "nope")
    with pytest.raises(CommandError, match="--tenant"):
        call_command("create_portal_user", "bob", "--role", "tenant_admin")


# --- maximum token lifetime (API_TOKEN_MAX_LIFETIME_DAYS) ---------------------------------------


def test_a_token_expiring_in_2999_is_refused_naming_the_field(api_as, settings):
    assert settings.API_TOKEN_MAX_LIFETIME_DAYS == 365
    client = api_as(Role.TENANT_ADMIN)
    response = client.post(
        "/api/tokens/", {"name": "forever", "expires_at": "2999-01-01T00:00:00Z"}, format="json"
    )
    assert response.status_code == 400
    assert "365 days" in response.json()["expires_at"][0]
    assert not APIToken.objects.filter(name="forever").exists()
    past = client.post(
        "/api/tokens/", {"name": "stale", "expires_at": "2020-01-01T00:00:00Z"}, format="json"
    )
    assert past.status_code == 400 and "expires_at" in past.json()


def test_a_token_gets_the_maximum_lifetime_unless_it_asks_for_less(api_as, settings):
    settings.API_TOKEN_MAX_LIFETIME_DAYS = 30
    client = api_as(Role.OPERATOR)
    before = timezone.now()
    default = client.post("/api/tokens/", {"name": "ci"}, format="json").json()["token"]
    expires = datetime.fromisoformat(default["expires_at"])
    assert before + timedelta(days=30) <= expires <= timezone.now() + timedelta(days=30)
    wanted = (timezone.now() + timedelta(days=29)).isoformat()
    shorter = client.post("/api/tokens/", {"name": "short", "expires_at": wanted}, format="json")
    assert shorter.status_code == 201
    too_long = (timezone.now() + timedelta(days=31)).isoformat()
    refused = client.post("/api/tokens/", {"name": "long", "expires_at": too_long}, format="json")
    assert refused.status_code == 400 and "30 days" in refused.json()["expires_at"][0]


def test_the_service_enforces_the_maximum_for_every_caller(make_user):
    user = make_user(Role.VIEWER)
    with pytest.raises(InvalidInput) as error:
        api_token_create(user=user, name="x", expires_at=timezone.now() + timedelta(days=366))
    assert "expires_at" in error.value.detail
    token, _ = api_token_create(user=user, name="y")
    assert token.expires_at <= timezone.now() + timedelta(days=365)


def test_create_portal_user_tokens_expire_and_cannot_outlive_the_maximum():
    out = io.StringIO()
    call_command("create_portal_user", "carol", "--role", "viewer", stdout=out)
    token = APIToken.objects.get(user__username="carol")
    assert timezone.now() + timedelta(days=364) < token.expires_at
    assert token.expires_at <= timezone.now() + timedelta(days=365)
    assert f"expires {token.expires_at:%Y-%m-%d}" in out.getvalue()

    call_command("create_portal_user", "dave", "--role", "viewer", "--token-days", "7", stdout=out)
    token = APIToken.objects.get(user__username="dave")
    assert token.expires_at <= timezone.now() + timedelta(days=7)
    with pytest.raises(CommandError, match="--token-days: A token may live at most 365 days"):
        call_command("create_portal_user", "erin", "--role", "viewer", "--token-days", "4000")
    assert not User.objects.filter(username="erin").exists()
