"""Bad input gets a 4xx naming the problem; nothing 500s; unknown API routes are JSON 404s."""

import pytest

from portal.models import Role, Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(api_as):
    return api_as(Role.ADMIN)


def test_malformed_json_is_a_400_that_says_so(admin):
    response = admin.generic(
        "POST", "/api/tenants/", '{"name": "x", ', content_type="application/json"
    )
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_unknown_fields_are_named(admin):
    response = admin.post(
        "/api/tenants/",
        {"name": "T", "slug": "t", "slurm_account": "t", "evpn_vni": 5, "vlan": 7},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {"vlan": ["Unknown field."]}
    assert not Tenant.objects.filter(slug="t").exists()


def test_read_only_fields_are_named_not_ignored(admin):
    response = admin.post(
        "/api/tenants/",
        {"name": "T", "slug": "t", "slurm_account": "t", "evpn_vni": 5, "user_count": 9},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {"user_count": ["This field is read-only."]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("evpn_vni", "ten"),
        ("evpn_vni", 2**24),
        ("evpn_vni", 0),
        ("slug", "has space"),
        ("slurm_account", "bad;account"),
    ],
)
def test_wrong_types_and_ranges_name_the_field(admin, field, value):
    body = {"name": "T", "slug": "t", "slurm_account": "t", "evpn_vni": 5, field: value}
    response = admin.post("/api/tenants/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_json_array_instead_of_an_object_is_a_400(admin):
    response = admin.post("/api/tenants/", [1, 2], format="json")
    assert response.status_code == 400


def test_canary_validation_names_fields(admin):
    missing = admin.post("/api/actions/canary/", {}, format="json")
    assert missing.status_code == 400 and "reason" in missing.json()
    wrong = admin.post(
        "/api/actions/canary/", {"reason": "x", "hold_seconds": "long"}, format="json"
    )
    assert wrong.status_code == 400 and "hold_seconds" in wrong.json()
    too_long = admin.post(
        "/api/actions/canary/", {"reason": "x", "hold_seconds": 3600}, format="json"
    )
    assert too_long.status_code == 400 and "hold_seconds" in too_long.json()


def test_unknown_api_routes_are_json_404s(admin):
    response = admin.get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "/api/no-such-thing/" in response.json()["detail"]


def test_missing_objects_are_json_404s(admin):
    response = admin.get("/api/actions/999999/")
    assert response.status_code == 404
    assert response.json()["detail"]


def test_wrong_method_is_405(admin):
    assert admin.put("/api/actions/", {}, format="json").status_code == 405


def test_deleting_a_tenant_with_users_is_a_409_not_a_500(admin, make_user, tenant_a):
    make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    response = admin.delete(f"/api/tenants/{tenant_a.pk}/")
    assert response.status_code == 409
    assert "still has users" in response.json()["detail"]
    assert Tenant.objects.filter(pk=tenant_a.pk).exists()


def test_cancelling_a_finished_action_is_a_409_naming_the_status(admin):
    created = admin.post("/api/actions/canary/", {"reason": "x"}, format="json")
    from portal.services.actions import run_action

    run_action(action_id=created.json()["id"])
    response = admin.post(f"/api/actions/{created.json()['id']}/cancel/", {}, format="json")
    assert response.status_code == 409
    assert response.json()["status"] == "succeeded"


def test_cancel_a_queued_action(admin):
    created = admin.post("/api/actions/canary/", {"reason": "x"}, format="json")
    response = admin.post(
        f"/api/actions/{created.json()['id']}/cancel/", {"reason": "wrong cluster"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"


def test_idempotency_key_header_returns_the_same_action(admin):
    first = admin.post(
        "/api/actions/canary/", {"reason": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="deploy-42"
    )
    second = admin.post(
        "/api/actions/canary/", {"reason": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="deploy-42"
    )
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.TENANT_ADMIN])
def test_roles_that_may_not_act_get_403(api_as, role):
    assert (
        api_as(role).post("/api/actions/canary/", {"reason": "x"}, format="json").status_code == 403
    )


def test_tenant_admins_see_only_their_tenant(api_as, tenant_a, tenant_b):
    client = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    listed = [row["slug"] for row in client.get("/api/tenants/").json()["results"]]
    assert listed == ["tenant-a"]
    assert client.get(f"/api/tenants/{tenant_b.pk}/").status_code == 404
    assert client.get("/api/actions/").status_code == 403


# --- NUL characters: PostgreSQL cannot store them, so they must never reach it ----


def test_a_nul_character_in_a_query_parameter_is_a_400_naming_it(admin):
    response = admin.get("/api/jobs/analytics/", {"tenant": "tenant-a\x00"})
    assert response.status_code == 400
    assert response.json()["tenant"] == ["NUL characters (\\u0000) are not allowed."]
    assert admin.get("/api/inventory/nodes/", {"search\x00": "x"}).status_code == 400


def test_a_nul_character_in_a_page_query_or_path_is_a_plain_400(admin):
    admin.force_login(admin.user)
    response = admin.get("/inventory/nodes/", {"q": "gpu\x00"})
    assert response.status_code == 400
    assert "q: NUL characters" in response.content.decode()
    # The hostname in the path went to the database as it was.
    page = admin.get("/inventory/nodes/gpu%00/")
    assert page.status_code == 400 and "path: NUL" in page.content.decode()


def test_a_nul_character_in_a_header_is_a_400_naming_it(admin):
    response = admin.post(
        "/api/actions/canary/", {"reason": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="deploy\x00"
    )
    assert response.status_code == 400 and "Idempotency-Key" in response.json()


def test_a_nul_character_anywhere_in_a_json_body_is_a_400_naming_the_field(admin):
    # `disks` is a JSONField: no serializer field checks its strings, the database refused them.
    body = {"hostname": "gpu901", "disks": [{"name": "nvme0", "model": "x\u0000"}]}
    response = admin.post("/api/inventory/nodes/", body, format="json")
    assert response.status_code == 400
    assert response.json()["disks[0].model"] == ["NUL characters (\\u0000) are not allowed."]
    bulk = admin.post("/api/inventory/nodes/bulk/", [body], format="json")
    assert bulk.status_code == 400 and "[0].disks[0].model" in bulk.json()
    assert "NUL" in bulk.json()["detail"]


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
@pytest.mark.parametrize("role", [Role.VIEWER, Role.ADMIN])
def test_json_nested_too_deep_is_a_400_naming_the_depth(api_as, role, depth, caplog):
    client = api_as(role)
    body = '{"name": ' + "[" * depth + "]" * depth + "}"
    response = client.generic("POST", "/api/tokens/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested deeper than 64 levels" in response.json()["detail"]
    assert "Traceback" not in caplog.text


def test_json_as_deep_as_allowed_still_reaches_the_serializer(admin):
    body = '{"name": ' + "[" * 63 + "]" * 63 + "}"
    response = admin.generic("POST", "/api/tenants/", body, content_type="application/json")
    assert response.status_code == 400
    assert "name" in response.json()


def test_an_oversized_json_body_is_a_json_413(admin, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = '{"name": "' + "x" * 20_000 + '"}'
    response = admin.generic("POST", "/api/tenants/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "10,000 bytes" in response.json()["detail"]


@pytest.mark.parametrize("page_size", ["0", "1001", "ten", "-1", "null"])
@pytest.mark.parametrize("path", ["/api/tenants/", "/api/inventory/nics/"])
def test_a_bad_page_size_is_a_400_naming_it(admin, path, page_size):
    """DRF served the default page for any page_size it could not use: a client asking for
    0 or 5,000 rows never learnt that it got 100."""
    response = admin.get(path, {"page_size": page_size})
    assert response.status_code == 400
    assert "page_size" in response.json()


def test_the_schema_states_the_page_size_bounds(admin):
    schema = admin.get("/api/schema/?format=json").json()
    for path in ("/api/tenants/", "/api/inventory/nics/"):
        (page_size,) = [
            p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "page_size"
        ]
        assert page_size["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}


def test_the_schema_states_the_body_limits_the_api_enforces(admin):
    """schemathesis's positive data came back 400 where the schema did not say: unknown fields
    (strict serializers refuse them), an empty bulk list, form bodies that cannot say null."""
    schema = admin.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    token = components["APITokenCreateRequest"]
    assert token["additionalProperties"] is False
    assert token["properties"]["name"]["maxLength"] == 100
    assert components["TenantRequest"]["additionalProperties"] is False
    drain = components["NodeDrainRequestRequest"]["properties"]["node_ids"]
    assert drain["minItems"] == 1
    bulk = schema["paths"]["/api/inventory/nodes/bulk/"]
    for method in ("post", "patch"):
        body = bulk[method]["requestBody"]["content"]["application/json"]["schema"]
        assert (body["minItems"], body["maxItems"]) == (1, 1000)
    media_types = {
        media_type
        for operations in schema["paths"].values()
        for operation in operations.values()
        for media_type in operation.get("requestBody", {}).get("content", {})
    }
    assert {"application/json", "application/yaml"} <= media_types
    assert media_types <= {"application/json", "application/yaml", "text/yaml"}


@pytest.mark.parametrize("name", ["created_after", "created_before"])
def test_a_time_filter_with_an_offset_postgresql_refuses_is_no_500(admin, name):
    """Python reads a UTC offset up to ±23:59; PostgreSQL refuses one past ±15:59 ("time zone
    displacement out of range", a 500). Found by schemathesis on /api/actions/."""
    response = admin.get("/api/actions/", {name: "0014-12-03T08:44:52-21:01"})
    assert response.status_code == 200
    response = admin.get("/api/actions/", {name: "0001-01-01T00:00:00+05:00"})
    assert response.status_code == 400 and name in response.json()
    assert admin.get("/api/audit/", {"until": "2026-01-01T00:00:00+23:00"}).status_code == 200
