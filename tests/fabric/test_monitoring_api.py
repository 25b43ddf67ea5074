"""The fabric monitoring API: roles, payloads, bad input, constant query counts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabric.lldp import collect_and_reconcile
from fabric.models import SwitchThroughputLatest
from portal.models import Role

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: fleets and the emulated fabric
pytestmark = pytest.mark.django_db


@pytest.fixture
def polled(polled_fleet, settings):
    settings.FABRIC_DRIVER = "fabric.drivers.emulated.EmulatedDriver"
    return polled_fleet


def queries(client, url) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return len(captured), response


@pytest.mark.parametrize("role", [Role.ADMIN, Role.OPERATOR, Role.ONCALL, Role.VIEWER])
def test_cluster_roles_read_the_fabric(api_as, polled, role):
    response = api_as(role).get("/api/fabric/switches/?role=leaf")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 16
    leaf = next(item for item in body["results"] if item["hostname"] == "leaf-p1-r0")
    assert leaf["pod"] == "p1" and leaf["rail"] == 0
    assert leaf["poll"]["reachable"] and leaf["poll"]["in_bytes_per_second"] > 0


def test_tenant_admin_is_refused_everywhere(api_as, polled, tenant_a):
    client = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    for url in ("/api/fabric/switches/", "/api/fabric/switches/leaf-p1-r0/",
                "/api/fabric/ports/", "/api/fabric/aggregates/rails/",
                "/api/fabric/aggregates/switches/", "/api/fabric/lldp/findings/",
                "/api/fabric/rail-health/?nodes=gpu001"):
        assert client.get(url).status_code == 403, url


def test_viewer_cannot_write(api_as, polled):
    assert api_as(Role.VIEWER).post("/api/fabric/switches/", {}).status_code in (403, 405)


def test_switch_detail_and_its_ports(operator_api, polled):
    detail = operator_api.get("/api/fabric/switches/leaf-p1-r0/").json()
    assert detail["hostname"] == "leaf-p1-r0" and detail["poll"]["ports_up"] > 0
    ports = operator_api.get("/api/fabric/switches/leaf-p1-r0/ports/?page_size=200").json()
    by_name = {port["name"]: port for port in ports["results"]}
    first = by_name["Ethernet0"]
    assert first["cabled_to"] == "gpu001 mlx5_0"
    assert first["counters"]["oper_up"] and first["counters"]["in_bytes_per_second"] > 0
    assert len(first["counters"]["pfc_rx_rates"]) == 8
    assert "Port1" not in by_name  # broken-out cages carry no counters, their halves do
    assert operator_api.get("/api/fabric/switches/nope/").status_code == 404


def test_port_history(operator_api, polled):
    port = operator_api.get("/api/fabric/ports/?switch=leaf-p1-r0").json()["results"][0]
    history = operator_api.get(f"/api/fabric/ports/{port['id']}/history/?hours=24").json()
    assert len(history) == 2 and history[0]["bucket_start"] < history[1]["bucket_start"]
    assert history[-1]["in_bytes_per_second"] > 0
    bad = operator_api.get(f"/api/fabric/ports/{port['id']}/history/?hours=99")
    assert bad.status_code == 400 and "hours" in str(bad.json())


def test_aggregates_per_switch_and_rail(operator_api, polled):
    switches = operator_api.get("/api/fabric/aggregates/switches/?role=leaf").json()
    assert switches["count"] == 16
    leaf = next(item for item in switches["results"] if item["hostname"] == "leaf-p1-r0")
    assert leaf["host_facing"]["ports"] == 4 and leaf["uplinks"]["ports"] == 32
    assert leaf["host_facing"]["in_bytes_per_second"] > 0
    rails = operator_api.get("/api/fabric/aggregates/rails/").json()
    assert [rail["rail"] for rail in rails] == list(range(8))
    assert rails[0]["leafs"] == ["leaf-p1-r0", "leaf-p2-r0"]
    assert rails[0]["host_facing"]["ports"] == 4 + 4
    total, host_facing = rails[0]["total"], rails[0]["host_facing"]
    assert total["in_bytes_per_second"] > host_facing["in_bytes_per_second"] > 0
    bad = operator_api.get("/api/fabric/aggregates/switches/?role=router")
    assert bad.status_code == 400 and "role" in str(bad.json())


def test_lldp_findings(operator_api, polled):
    crossed = (("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
    polled.cross_cables(*crossed)
    try:
        collect_and_reconcile()
    finally:
        polled.cross_cables(*crossed)  # the fleet is shared by the module's tests
    findings = operator_api.get("/api/fabric/lldp/findings/").json()["results"]
    assert [(f["kind"], f["ports"]) for f in findings] == [
        ("swapped", ["leaf-p1-r2:Ethernet4", "leaf-p1-r3:Ethernet4"])
    ]
    assert operator_api.get("/api/fabric/lldp/findings/?kind=missing").json()["count"] == 0
    bad = operator_api.get("/api/fabric/lldp/findings/?kind=loose")
    assert bad.status_code == 400 and "kind" in str(bad.json())


def test_rail_health_for_a_hostlist(operator_api, polled):
    body = operator_api.get("/api/fabric/rail-health/?nodes=gpu[001-004]").json()
    assert body["nodes"] == "gpu[001-004]"
    assert [rail["rail"] for rail in body["rails"]] == list(range(8))
    assert body["imbalance"]["samples_used"] == 2 and not body["imbalance"]["imbalanced"]
    missing = operator_api.get("/api/fabric/rail-health/")
    assert missing.status_code == 400 and "nodes" in str(missing.json())
    unknown = operator_api.get("/api/fabric/rail-health/?nodes=gpu[900-901]")
    assert unknown.status_code == 400 and "gpu[900-901]" in str(unknown.json())


def test_lists_cost_the_same_for_any_page_size(operator_api, polled):
    queries(operator_api, "/api/fabric/switches/")  # the token's first use writes once
    small, _ = queries(operator_api, "/api/fabric/ports/?page_size=5")
    large, response = queries(operator_api, "/api/fabric/ports/?page_size=500")
    assert len(response.json()["results"]) == 500 and large == small
    small, _ = queries(operator_api, "/api/fabric/switches/?page_size=2")
    large, _ = queries(operator_api, "/api/fabric/switches/?page_size=26")
    assert large == small
    few, _ = queries(operator_api, "/api/fabric/aggregates/switches/")
    assert few <= 6


def test_aggregates_read_what_the_poll_summed_not_every_port(operator_api, polled):
    """At 100,000 GPUs summing 180,000 counter rows per request took 4-9 s (bench/ui_scale.py
    at scale 125): the poll stores each switch's sums by facing, and the API reads those."""
    for url in ("/api/fabric/aggregates/switches/", "/api/fabric/aggregates/rails/"):
        with CaptureQueriesContext(connection) as captured:
            assert operator_api.get(url).status_code == 200
        assert not [q["sql"] for q in captured if "fabric_portcounterlatest" in q["sql"]], url
    stored = SwitchThroughputLatest.objects.get(switch__hostname="leaf-p1-r0", facing="nic")
    leaf = next(item for item in operator_api.get("/api/fabric/aggregates/switches/").json()[
        "results"] if item["hostname"] == "leaf-p1-r0")
    assert leaf["host_facing"]["ports"] == stored.ports == 4
    assert leaf["host_facing"]["in_bytes_per_second"] == stored.in_bytes_per_second > 0


def test_switch_aggregates_are_paged_in_the_switch_order(operator_api, polled):
    """2,000 switches' aggregates were one 1.7 MB answer at scale 125: paged like every list,
    by role, pod, rail and hostname, a page's figures the same as the whole list's."""
    whole = operator_api.get("/api/fabric/aggregates/switches/?page_size=500").json()
    first = operator_api.get("/api/fabric/aggregates/switches/?page_size=5").json()
    second = operator_api.get(first["next"]).json()
    assert first["count"] == whole["count"] > 10
    assert first["results"] + second["results"] == whole["results"][:10]
    leafs = [item for item in whole["results"] if item["role"] == "leaf"]
    assert [(item["pod"], item["rail"]) for item in leafs] == sorted(
        (item["pod"], item["rail"]) for item in leafs)
    few, _ = queries(operator_api, "/api/fabric/aggregates/switches/?page_size=5")
    many, _ = queries(operator_api, "/api/fabric/aggregates/switches/?page_size=500")
    assert few == many
