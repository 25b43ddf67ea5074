"""Topology import, validation, cable trace and nodes-behind-a-switch through the API."""

from __future__ import annotations

import json

import pytest
import yaml
from django.conf import settings

from inventory.models import Cable, Node, Pod, Switch, SwitchPort, TopologyImportRun
from tests.inventory.api_helpers import API, nic, port
from tests.inventory.test_spec import alias_bomb

pytestmark = pytest.mark.django_db

SPINES = [f"spine-{n}" for n in range(1, 9)]


def small_spec(sakuraone_spec: dict) -> dict:
    """The SAKURAONE spec renamed so that it imports beside the fleet: one pod of four nodes."""
    spec = sakuraone_spec
    spec["name"] = "mini"
    spec["pods"] = [
        {
            "name": "m1",
            "description": "Mini pod",
            "racks": {"name": "{pod}-rack{n:02d}", "nodes_per_rack": 4},
            "nodes": [{"range": "mini[01-04]", "template": "sys-821ge-tnhr", "status": "active"}],
        }
    ]
    spec["identifiers"] = {"mac_oui": "02:00:00"}
    for group in spec["switch_groups"]:
        group["hostname"] = "mini-" + group["hostname"]
        group.pop("management_address", None)
    for link in spec["wiring"]["node_links"]:
        link["switch"] = "mini-" + link["switch"]
    return spec


def test_import_dry_run_then_for_real_then_again(sakuraone, operator_api, sakuraone_spec):
    spec = small_spec(sakuraone_spec)
    dry = operator_api.post(
        f"{API}/topology/import", {"spec": spec, "dry_run": True}, format="json"
    )
    assert dry.status_code == 200, dry.json()
    assert dry.json()["dry_run"] is True
    assert dry.json()["counts"]["nodes"]["created"] == 4
    assert not Node.objects.filter(hostname__startswith="mini").exists()

    real = operator_api.post(f"{API}/topology/import", {"spec": spec}, format="json")
    assert real.status_code == 200, real.json()
    assert real.json()["counts"]["nodes"]["created"] == 4
    assert Node.objects.filter(hostname__startswith="mini").count() == 4
    run = TopologyImportRun.objects.get(pk=real.json()["run_id"])
    assert run.actor == operator_api.user

    again = operator_api.post(f"{API}/topology/import", {"spec": spec}, format="json")
    assert again.json()["counts"]["nodes"] == {"created": 0, "updated": 0, "unchanged": 4}


def test_import_takes_the_yaml_file_as_it_is(sakuraone, operator_api, sakuraone_spec):
    text = yaml.safe_dump(small_spec(sakuraone_spec))
    response = operator_api.generic(
        "POST", f"{API}/topology/import?dry_run=true", text, content_type="application/yaml"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["dry_run"] is True
    assert response.json()["counts"]["gpus"]["created"] == 32
    as_string = operator_api.post(
        f"{API}/topology/import", {"spec": text, "dry_run": True}, format="json"
    )
    assert as_string.json()["counts"] == response.json()["counts"]


def test_bad_spec_reports_every_error_with_its_location(sakuraone, operator_api, sakuraone_spec):
    spec = small_spec(sakuraone_spec)
    spec["pods"][0]["nodes"][0]["template"] = "no-such-template"
    spec["switch_groups"][0]["count"] = "eight"
    before = Pod.objects.count()
    response = operator_api.post(f"{API}/topology/import", {"spec": spec}, format="json")
    assert response.status_code == 400
    locations = {error["location"] for error in response.json()["errors"]}
    assert "pods[0].nodes[0].template" in locations
    assert "switch_groups[0].count" in locations
    assert Pod.objects.count() == before


def test_bad_yaml_and_bad_options_are_400s(sakuraone, operator_api):
    broken = operator_api.generic(
        "POST", f"{API}/topology/import", "pods: [unclosed", content_type="application/yaml"
    )
    assert broken.status_code == 400
    assert broken.json()["errors"][0]["location"].startswith("yaml")
    scale = operator_api.post(f"{API}/topology/import", {"spec": {}, "scale": 0}, format="json")
    assert scale.status_code == 400
    assert "scale" in scale.json()
    unknown = operator_api.post(
        f"{API}/topology/import", {"spec": {}, "force": True}, format="json"
    )
    assert unknown.status_code == 400
    assert unknown.json()["force"] == ["Unknown field."]
    not_object = operator_api.generic(
        "POST", f"{API}/topology/import", json.dumps([1]), content_type="application/json"
    )
    assert not_object.status_code == 400
    assert "spec" in not_object.json()


def test_a_yaml_alias_bomb_is_a_400_and_an_oversized_spec_a_413(sakuraone, operator_api):
    runs_before = TopologyImportRun.objects.count()
    for content_type in ("application/yaml", "text/yaml"):
        bomb = operator_api.generic(
            "POST", f"{API}/topology/import", alias_bomb(), content_type=content_type
        )
        assert bomb.status_code == 400, bomb.content[:200]
        assert "aliases repeat what they name" in bomb.json()["errors"][0]["message"]
    as_string = operator_api.post(
        f"{API}/topology/import", {"spec": alias_bomb(), "dry_run": True}, format="json"
    )
    assert as_string.status_code == 400
    assert as_string.json()["errors"][0]["location"].startswith("yaml line")
    oversized = operator_api.generic(
        "POST",
        f"{API}/topology/import",
        "# padding\n" * (settings.TOPOLOGY_SPEC_MAX_BYTES // 10 + 1),
        content_type="application/yaml",
    )
    assert oversized.status_code == 413
    assert "at most" in oversized.json()["spec"][0]
    assert TopologyImportRun.objects.count() == runs_before


def test_validation_lists_violations_by_rule(sakuraone, operator_api):
    clean = operator_api.get(f"{API}/validation")
    assert clean.status_code == 200
    assert clean.json()["count"] == 0
    assert "rail" in clean.json()["rules"]
    # Move gpu001's rail-0 cable onto leaf r1: a rail violation.
    cable = Cable.objects.get(a_nic=nic("gpu001", "mlx5_0"))
    cable.b_port = port("leaf-p1-r1", "Ethernet200")
    cable.save()  # as the API writes it: the cached validation is computed anew
    rail = operator_api.get(f"{API}/validation", {"rule": "rail"}).json()
    assert rail["count"] >= 1
    assert {violation["rule"] for violation in rail["violations"]} == {"rail"}
    assert any("gpu001" in violation["message"] for violation in rail["violations"])
    unknown = operator_api.get(f"{API}/validation", {"rule": "rail,colour"})
    assert unknown.status_code == 400
    assert "colour" in unknown.json()["rule"][0]


def test_trace_of_a_rail_nic_reaches_every_spine(sakuraone, operator_api):
    response = operator_api.get(f"{API}/nics/{nic('gpu051', 'mlx5_11').pk}/trace/")
    assert response.status_code == 200
    trace = response.json()
    assert (trace["nic"]["node"], trace["nic"]["rail"]) == ("gpu051", 7)
    assert trace["port"]["name"] == "Ethernet0"
    assert trace["port"]["breakout_parent"] == "Port1"
    assert (trace["switch"]["hostname"], trace["switch"]["rail"]) == ("leaf-p2-r7", 7)
    assert len(trace["uplinks"]) == 32
    assert [spine["hostname"] for spine in trace["spines"]] == SPINES
    assert trace["notes"] == []
    uncabled = operator_api.get(f"{API}/nics/{nic('gpu051', 'eno1').pk}/trace/").json()
    assert uncabled["cable"] is None
    assert uncabled["notes"] == ["gpu051 eno1 is not cabled"]


@pytest.mark.parametrize("route", ["nics/", "ports/", "ports/bulk/", "nodes/"])
def test_http_trace_is_405_not_the_cable_trace(sakuraone, operator_api, route):
    # DRF dispatches an HTTP method to the view method of that name: a `trace` action answered
    # TRACE on every route of its viewset (with a 500 where it had no object).
    response = operator_api.generic("TRACE", f"{API}/{route}")
    assert response.status_code == 405


def test_trace_from_a_leaf_port_and_an_uplink(sakuraone, operator_api):
    host_port = operator_api.get(f"{API}/ports/{port('leaf-p1-r0', 'Ethernet0').pk}/trace/")
    assert host_port.status_code == 200
    assert host_port.json()["nic"]["node"] == "gpu001"
    uplink = SwitchPort.objects.get(switch__hostname="leaf-p1-r0", name="Ethernet256")
    body = operator_api.get(f"{API}/ports/{uplink.pk}/trace/").json()
    assert body["nic"] is None
    (link,) = body["uplinks"]
    assert link["local_port"]["switch"]["hostname"] == "leaf-p1-r0"
    assert link["remote_port"]["switch"]["role"] == "spine"
    assert operator_api.get(f"{API}/ports/999999/trace/").status_code == 404


def test_nodes_behind_a_leaf(sakuraone, operator_api):
    leaf = Switch.objects.get(hostname="leaf-p1-r3")
    response = operator_api.get(f"{API}/switches/{leaf.pk}/nodes-behind/")
    assert response.status_code == 200
    rows = response.json()
    assert len(rows) == 50
    assert {row["rail"] for row in rows} == {3}
    first = rows[0]
    assert first["port"]["name"] == "Ethernet0"
    assert first["node"]["hostname"] == "gpu001"
    assert first["nic"]["device"] == "mlx5_4"
    assert first["cable"]["status"] == "connected"
    spine = Switch.objects.get(hostname="spine-1")
    assert operator_api.get(f"{API}/switches/{spine.pk}/nodes-behind/").json() == []
