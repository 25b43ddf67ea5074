"""Input is read as the OpenAPI schema documents it: what the schema calls invalid is a 400
naming the parameter or field, never a silently different question. One reader does it for
every operation's query parameters (portal/api/query_parameters.py) and one serializer base
for JSON bodies (portal/api/serializers.py)."""

import pytest

from portal.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(api_as):
    return api_as(Role.OPERATOR)


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/inventory/gpus/?index=0.5", "index"),  # a filter set's integer filter
        ("/api/inventory/nics/?rail=0.5", "rail"),
        ("/api/tenants/?evpn_vni=0.5", "evpn_vni"),  # filterset_fields
        ("/api/inventory/cables/?rail=1.5", "rail"),  # a NumberFilter read by a method
    ],
)
def test_an_integer_filter_refuses_a_fraction(operator, url, parameter):
    response = operator.get(url)
    assert response.status_code == 400
    assert parameter in response.json()


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/actions/?created_before=", "created_before"),  # a filter set's date filter
        ("/api/audit/?since=", "since"),
        ("/api/jobs/analytics/?until=", "until"),  # views reading the query themselves
        ("/api/telemetry/observation3/?since=", "since"),
        ("/api/faults/statistics/?start=", "start"),
        ("/api/fabric/switches/?status=", "status"),  # an enum
    ],
)
def test_an_empty_date_or_choice_is_refused(operator, url, parameter):
    response = operator.get(url)
    assert response.status_code == 400
    assert parameter in response.json()


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/inventory/allocations/?current=true&current=false", "current"),
        ("/api/jobs/jobs/?live=true&live=true", "live"),
        ("/api/faults/intake/?accepted=true&accepted=false", "accepted"),
    ],
)
def test_a_parameter_given_twice_is_refused(operator, url, parameter):
    response = operator.get(url)
    assert response.status_code == 400
    assert response.json()[parameter] == ["Give this parameter once (it takes one value)."]


def test_a_list_parameter_may_be_given_twice(operator):
    response = operator.get("/api/inventory/nodes/?status=active&status=planned")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/inventory/allocations/?current=maybe", "current"),
        ("/api/inventory/ports/?breakout=2", "breakout"),
        ("/api/jobs/jobs/?live=null", "live"),
    ],
)
def test_a_boolean_is_true_or_false(operator, url, parameter):
    response = operator.get(url)
    assert response.status_code == 400
    assert parameter in response.json()


def test_an_empty_page_number_is_refused(operator):
    response = operator.get("/api/inventory/allocations/?page=")
    assert response.status_code == 400
    assert "page" in response.json()


def test_well_formed_parameters_still_filter(operator):
    assert operator.get("/api/inventory/gpus/?index=3").status_code == 200
    assert operator.get("/api/actions/?created_before=2026-11-26T22:00:00Z").status_code == 200
    assert operator.get("/api/jobs/analytics/?since=2026-11-01").status_code == 200
    assert operator.get("/api/inventory/allocations/?current=true").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": 0}, "reason"),  # a number for text
        ({"reason": "rehearse", "hold_seconds": False}, "hold_seconds"),  # a boolean for a number
        ({"reason": "rehearse", "hold_seconds": "1"}, "hold_seconds"),  # text for a number
        ({"reason": "rehearse", "idempotency_key": 7}, "idempotency_key"),
    ],
)
def test_a_json_value_of_another_type_is_refused(operator, body, field):
    response = operator.post("/api/actions/canary/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_number_as_text_is_refused_for_an_integer_field(api_as):
    admin = api_as(Role.ADMIN)
    body = {"name": "T", "slug": "t", "slurm_account": "t", "evpn_vni": "5"}
    response = admin.post("/api/tenants/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"evpn_vni": ["Use a whole number (a JSON number)."]}


def test_a_bulk_item_of_another_type_is_named_by_index(api_as):
    admin = api_as(Role.ADMIN)
    response = admin.post("/api/inventory/pods/bulk/", [{"name": 7}], format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"index": 0, "fields": {"name": ["Use text (a JSON string)."]}}
    ]


def test_a_bulk_patch_item_schema_requires_its_id():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    item = schema["components"]["schemas"]["PatchedPodBulkUpdateItemRequest"]
    assert item["required"] == ["id"]


def served_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_states_reasons_as_one_printable_line(api_as):
    import re

    document = served_schema()
    body = document["paths"]["/api/jobs/nodes/drain/"]["post"]["requestBody"]
    name = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    pattern = document["components"]["schemas"][name]["properties"]["reason"]["pattern"]
    assert re.search(pattern, " disk swap\n")  # trimmed, as DRF trims
    assert not re.search(pattern, "two\nlines")
    response = api_as(Role.OPERATOR).post(
        "/api/jobs/nodes/drain/", {"hostlist": "gpu001", "reason": "two\nlines"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["reason"] == ["Use one line of printable text."]


def test_the_schema_states_text_without_nul_and_not_blank():
    import re

    properties = served_schema()["components"]["schemas"]["PodRequest"]["properties"]
    pattern = properties["name"]["pattern"]
    assert re.search(pattern, " pod1 ")
    assert not re.search(pattern, "\x1c \t")  # DRF trims it to nothing: "may not be blank"
    assert not re.search(pattern, "pod\x001")


def test_the_schema_states_query_text_without_nul_and_whole_number_filters():
    parameters = {
        parameter["name"]: parameter["schema"]
        for parameter in served_schema()["paths"]["/api/inventory/cables/"]["get"]["parameters"]
    }
    assert parameters["node"]["pattern"] == "^[^\\u0000]*$"
    assert parameters["rail"]["type"] == "integer"  # a NumberFilter read by a method


def test_a_ticket_note_refuses_an_unknown_field(operator):
    from django.utils import timezone

    from faults.models import FaultTicket

    ticket = FaultTicket.objects.create(summary="GPU fell off the bus", detected_at=timezone.now())
    response = operator.post(
        f"/api/faults/tickets/{ticket.pk}/notes/", {"text": "seen", "colour": "red"}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"colour": ["Unknown field."]}


def test_credentials_and_role_are_checked_before_the_query(api_as):
    from rest_framework.test import APIClient

    assert APIClient().get("/api/inventory/gpus/?index=0.5").status_code == 401
    tenant_admin = api_as(Role.TENANT_ADMIN)  # may not read the audit log
    assert tenant_admin.get("/api/audit/?since=").status_code == 403
