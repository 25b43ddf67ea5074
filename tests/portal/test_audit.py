"""Every create/update/delete through the API, the admin UI and every Action is audited."""

import pytest
from django.test import Client

from portal.models import AuditEntry, Role, Tenant

pytestmark = pytest.mark.django_db

NEW_TENANT = {"name": "Tenant C", "slug": "tenant-c", "slurm_account": "tc", "evpn_vni": 10400}


def test_api_create_update_delete_record_who_and_before_after(api_as):
    admin = api_as(Role.ADMIN)
    created = admin.post("/api/tenants/", NEW_TENANT, format="json")
    assert created.status_code == 201
    tenant_id = created.json()["id"]
    assert (
        admin.patch(f"/api/tenants/{tenant_id}/", {"evpn_vni": 10401}, format="json").status_code
        == 200
    )
    assert admin.delete(f"/api/tenants/{tenant_id}/").status_code == 204

    entries = AuditEntry.objects.filter(object_type="portal.tenant", object_id=str(tenant_id))
    by_operation = {entry.operation: entry for entry in entries}
    assert set(by_operation) == {"create", "update", "delete"}
    assert all(entry.actor == admin.user and entry.via == "api" for entry in entries)
    assert by_operation["create"].before is None
    assert by_operation["create"].after["evpn_vni"] == 10400
    assert by_operation["update"].before["evpn_vni"] == 10400
    assert by_operation["update"].after["evpn_vni"] == 10401
    assert by_operation["delete"].before["slug"] == "tenant-c"
    assert by_operation["delete"].after is None


def test_a_failed_write_leaves_no_audit_record(api_as):
    admin = api_as(Role.ADMIN)
    admin.post("/api/tenants/", NEW_TENANT, format="json")
    before = AuditEntry.objects.count()
    duplicate = admin.post("/api/tenants/", NEW_TENANT, format="json")
    assert duplicate.status_code == 400
    assert AuditEntry.objects.count() == before


def test_admin_ui_changes_are_audited_as_ui(make_user):
    admin = make_user(Role.ADMIN)
    admin.is_staff = admin.is_superuser = True  # the Django admin wants model permissions
    admin.save()
    browser = Client()
    browser.force_login(admin)
    response = browser.post("/admin/portal/tenant/add/", NEW_TENANT)
    assert response.status_code == 302
    tenant = Tenant.objects.get(slug="tenant-c")
    entry = AuditEntry.objects.get(object_type="portal.tenant", object_id=str(tenant.pk))
    assert (entry.operation, entry.via, entry.actor) == ("create", "ui", admin)


def test_audit_log_is_readable_in_the_api_by_admins_and_operators_only(api_as):
    admin = api_as(Role.ADMIN)
    admin.post("/api/tenants/", NEW_TENANT, format="json")
    operator = api_as(Role.OPERATOR)
    listing = operator.get("/api/audit/", {"object_type": "portal.tenant", "operation": "create"})
    assert listing.status_code == 200
    rows = listing.json()["results"]
    assert [row["object_repr"] for row in rows] == ["Tenant C"]
    assert rows[0]["actor_name"] == admin.user.username
    for role in (Role.VIEWER, Role.ONCALL, Role.TENANT_ADMIN):
        assert api_as(role).get("/api/audit/").status_code == 403


def test_secrets_never_reach_the_audit_log(api_as):
    client = api_as(Role.VIEWER)
    client.post("/api/tokens/", {"name": "ci"}, format="json")
    for entry in AuditEntry.objects.filter(object_type="portal.apitoken"):
        assert "key_digest" not in (entry.after or {})
    for entry in AuditEntry.objects.filter(object_type="portal.user"):
        assert "password" not in (entry.after or {})
