"""Inventory API: create, read, update, delete for every model; brief nested representations;
bad input is a 400 naming the problem with nothing written."""

from __future__ import annotations

import pytest

from inventory.models import GPU, NIC, Cable, CableStatus, Node, Pod, Rack, Switch, SwitchPort
from portal.models import AuditEntry
from tests.inventory.api_helpers import API, nic, node, port

pytestmark = pytest.mark.django_db


def test_node_crud_round_trip_is_audited(sakuraone, operator_api):
    pod = Pod.objects.get(name="p1")
    rack = Rack.objects.get(name="p1-rack01")
    created = operator_api.post(
        f"{API}/nodes/",
        {
            "hostname": "gpu901",
            "serial": "X-901",
            "pod": pod.pk,
            "rack": rack.pk,
            "cpu_count": 2,
            "memory_gb": 1536,
            "status": "planned",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["pod"] == {
        "id": pod.pk,
        "url": f"http://testserver{API}/pods/{pod.pk}/",
        "name": "p1",
    }
    assert body["rack"]["name"] == "p1-rack01"
    url = f"{API}/nodes/{body['id']}/"
    assert operator_api.get(url).json()["hostname"] == "gpu901"

    changed = operator_api.patch(url, {"status": "maintenance"}, format="json")
    assert changed.status_code == 200
    assert Node.objects.get(hostname="gpu901").status == "maintenance"

    assert operator_api.delete(url).status_code == 204
    assert not Node.objects.filter(hostname="gpu901").exists()
    operations = list(
        AuditEntry.objects.filter(object_type="inventory.node", object_id=str(body["id"]))
        .order_by("timestamp", "id")
        .values_list("operation", flat=True)
    )
    assert operations == ["create", "update", "delete"]


def test_nic_shows_its_node_gpu_and_link_briefly(sakuraone, operator_api):
    rail_nic = nic("gpu001", "mlx5_0")
    body = operator_api.get(f"{API}/nics/{rail_nic.pk}/").json()
    assert body["node"] == {
        "id": rail_nic.node_id,
        "url": f"http://testserver{API}/nodes/{rail_nic.node_id}/",
        "hostname": "gpu001",
    }
    assert body["affinity_gpu"]["index"] == 0
    assert (body["role"], body["rail"]) == ("rail", 0)
    link = body["link"]
    assert link["cable"]["status"] == "connected"
    assert link["port"]["switch"]["hostname"] == "leaf-p1-r0"
    assert link["port"]["name"] == "Ethernet0"
    assert link["nic"] is None
    assert operator_api.get(f"{API}/nics/{nic('gpu001', 'eno1').pk}/").json()["link"] is None


def test_cable_shows_both_ends_briefly(sakuraone, operator_api):
    rail_nic = nic("gpu001", "mlx5_0")
    cable = Cable.objects.get(a_nic=rail_nic)
    body = operator_api.get(f"{API}/cables/{cable.pk}/").json()
    assert body["a_nic"]["device"] == "mlx5_0"
    assert body["a_nic"]["node"]["hostname"] == "gpu001"
    assert body["a_port"] is None
    assert body["b_nic"] is None
    assert body["b_port"]["name"] == "Ethernet0"
    assert body["b_port"]["switch"]["hostname"] == "leaf-p1-r0"


def test_switch_shows_the_credentials_reference_and_nothing_secret(sakuraone, operator_api):
    leaf = Switch.objects.get(hostname="leaf-p1-r0")
    body = operator_api.get(f"{API}/switches/{leaf.pk}/").json()
    assert body["credentials_ref"] == "sonic/leaf"
    assert not {"password", "secret", "credentials", "key"} & set(body)
    assert body["pod"]["name"] == "p1"
    assert body["rail"] == 0


def test_every_model_creates_updates_and_deletes(sakuraone, operator_api):
    pod = operator_api.post(f"{API}/pods/", {"name": "p9"}, format="json").json()
    rack = operator_api.post(
        f"{API}/racks/", {"name": "p9-rack01", "pod": pod["id"]}, format="json"
    ).json()
    new_node = operator_api.post(
        f"{API}/nodes/",
        {"hostname": "gpu950", "pod": pod["id"], "rack": rack["id"]},
        format="json",
    ).json()
    gpu = operator_api.post(f"{API}/gpus/", {"node": new_node["id"], "index": 0}, format="json")
    assert gpu.status_code == 201, gpu.json()
    nic_response = operator_api.post(
        f"{API}/nics/",
        {
            "node": new_node["id"],
            "device": "mlx5_0",
            "role": "rail",
            "rail": 0,
            "affinity_gpu": gpu.json()["id"],
            "affinity_kind": "PIX",
        },
        format="json",
    )
    assert nic_response.status_code == 201, nic_response.json()
    leaf = operator_api.post(
        f"{API}/switches/",
        {"hostname": "leaf-p9-r0", "role": "leaf", "pod": pod["id"], "rail": 0},
        format="json",
    )
    assert leaf.status_code == 201, leaf.json()
    leaf_port = operator_api.post(
        f"{API}/ports/",
        {"switch": leaf.json()["id"], "name": "Ethernet0", "speed_gbps": 400, "lanes": 4},
        format="json",
    )
    assert leaf_port.status_code == 201, leaf_port.json()
    cable = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": nic_response.json()["id"],
            "b_port": leaf_port.json()["id"],
            "type": "400GBASE-DR4",
            "length_m": "3.00",
        },
        format="json",
    )
    assert cable.status_code == 201, cable.json()
    assert cable.json()["status"] == "planned"
    cable_url = f"{API}/cables/{cable.json()['id']}/"
    connected = operator_api.patch(
        cable_url, {"status": "connected", "label": "C-1"}, format="json"
    )
    assert connected.status_code == 200, connected.json()
    assert (connected.json()["status"], connected.json()["label"]) == ("connected", "C-1")
    # The NIC is protected by its cable: 409 naming it, nothing deleted.
    refused = operator_api.delete(f"{API}/nics/{nic_response.json()['id']}/")
    assert refused.status_code == 409
    assert "Cable #" in refused.json()["detail"]
    assert NIC.objects.filter(pk=nic_response.json()["id"]).exists()
    for url in (
        cable_url,
        f"{API}/nics/{nic_response.json()['id']}/",
        f"{API}/ports/{leaf_port.json()['id']}/",
        f"{API}/switches/{leaf.json()['id']}/",
        f"{API}/gpus/{gpu.json()['id']}/",
        f"{API}/nodes/{new_node['id']}/",
        f"{API}/racks/{rack['id']}/",
        f"{API}/pods/{pod['id']}/",
    ):
        assert operator_api.delete(url).status_code == 204, url
    assert not Pod.objects.filter(name="p9").exists()


def test_malformed_json_is_a_400_and_writes_nothing(sakuraone, operator_api):
    before = Node.objects.count()
    response = operator_api.generic(
        "POST", f"{API}/nodes/", '{"hostname": "gpu999",', content_type="application/json"
    )
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]
    assert Node.objects.count() == before


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({"hostname": "gpu999", "colour": "red"}, "colour", "Unknown field"),
        ({"hostname": "gpu999", "memory_gb": "lots"}, "memory_gb", "whole number"),
        ({"hostname": "gpu999", "status": "sleeping"}, "status", "not a valid choice"),
        ({"hostname": "gpu999", "pod": 999999}, "pod", "does not exist"),
        ({"hostname": "gpu001"}, "hostname", "already exists"),
        ({"hostname": "gpu999", "slurm_state": "idle"}, "slurm_state", "read-only"),
        ({"hostname": "gpu999", "disks": "four"}, "disks", "disk groups"),
    ],
)
def test_bad_node_input_names_the_field(sakuraone, operator_api, payload, field, words):
    before = Node.objects.count()
    response = operator_api.post(f"{API}/nodes/", payload, format="json")
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])
    assert Node.objects.count() == before


def test_rack_of_another_pod_is_refused(sakuraone, operator_api):
    response = operator_api.patch(
        f"{API}/nodes/{node('gpu001').pk}/",
        {"rack": Rack.objects.get(name="p2-rack01").pk},
        format="json",
    )
    assert response.status_code == 400
    assert "pod p2" in response.json()["rack"][0]


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({"device": "mlx5_99", "role": "rail", "rail": 8}, "rail", "less than or equal to 7"),
        ({"device": "mlx5_99", "role": "rail", "rail": -1}, "rail", "greater than or equal"),
        ({"device": "mlx5_99", "role": "rail"}, "rail", "needs its rail index"),
        ({"device": "mlx5_99", "role": "storage", "rail": 2}, "rail", "only rail NICs"),
        ({"device": "mlx5_0", "role": "reserved"}, "non_field_errors", "node, device must make"),
        ({"device": "mlx5_99", "role": "reserved", "mac": "AA-BB"}, "mac", "lower-case hex"),
    ],
)
def test_bad_nic_input_names_the_field(sakuraone, operator_api, payload, field, words):
    before = NIC.objects.count()
    response = operator_api.post(
        f"{API}/nics/", {"node": node("gpu001").pk, **payload}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert words in " ".join(response.json()[field]), response.json()
    assert NIC.objects.count() == before


def test_nic_affinity_to_a_gpu_of_another_node_is_refused(sakuraone, operator_api):
    other_gpu = GPU.objects.get(node__hostname="gpu002", index=0)
    response = operator_api.patch(
        f"{API}/nics/{nic('gpu001', 'mlx5_3').pk}/", {"affinity_gpu": other_gpu.pk}, format="json"
    )
    assert response.status_code == 400
    assert "not in node gpu001" in response.json()["affinity_gpu"][0]


def test_gpu_index_out_of_range_and_duplicate(sakuraone, operator_api):
    gpu001 = node("gpu001").pk
    out_of_range = operator_api.post(f"{API}/gpus/", {"node": gpu001, "index": 8}, format="json")
    assert out_of_range.status_code == 400
    assert "index" in out_of_range.json()
    duplicate = operator_api.post(f"{API}/gpus/", {"node": gpu001, "index": 3}, format="json")
    assert duplicate.status_code == 400
    assert "unique" in str(duplicate.json())
    assert GPU.objects.filter(node_id=gpu001).count() == 8


# -- cables ------------------------------------------------------------------------------------


def test_duplicate_cable_end_is_a_400_naming_the_end(sakuraone, operator_api):
    before = Cable.objects.count()
    response = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": nic("gpu001", "mlx5_0").pk,
            "b_port": port("leaf-p1-r0", "Ethernet200").pk,
            "type": "800GBASE-2DR4",
        },
        format="json",
    )
    assert response.status_code == 400
    (message,) = response.json()["a"]
    assert message.startswith("gpu001 mlx5_0 is already in cable #")
    assert Cable.objects.count() == before


def test_cable_end_on_the_other_side_of_an_existing_cable_is_refused(sakuraone, operator_api):
    # leaf-p1-r0 Ethernet0 is side B of gpu001's rail-0 cable; here it would be side A.
    response = operator_api.post(
        f"{API}/cables/",
        {
            "a_port": port("leaf-p1-r0", "Ethernet0").pk,
            "b_port": port("leaf-p1-r1", "Ethernet200").pk,
            "type": "800GBASE-SR8",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "leaf-p1-r0 Ethernet0 is already in cable" in response.json()["a"][0]


def test_cable_to_the_wrong_rail_or_pod_leaf_is_refused(sakuraone, operator_api):
    # gpu001's reserved mlx5_3 is uncabled; make it a rail-3 NIC by hand first? No: use a rail
    # NIC freed by decommissioning its cable.
    rail_nic = nic("gpu001", "mlx5_4")  # rail 3
    Cable.objects.filter(a_nic=rail_nic).update(status=CableStatus.DECOMMISSIONED)
    before = Cable.objects.count()
    wrong_rail = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": rail_nic.pk,
            "b_port": port("leaf-p1-r5", "Ethernet200").pk,
            "type": "400GBASE-DR4",
        },
        format="json",
    )
    assert wrong_rail.status_code == 400
    assert wrong_rail.json()["a"] == ["gpu001 mlx5_4 is on rail 3; leaf-p1-r5 serves rail 5"]
    wrong_pod = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": rail_nic.pk,
            "b_port": port("leaf-p2-r3", "Ethernet200").pk,
            "type": "400GBASE-DR4",
        },
        format="json",
    )
    assert wrong_pod.status_code == 400
    assert "leaf of pod p2" in wrong_pod.json()["a"][0]
    assert Cable.objects.count() == before
    right = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": rail_nic.pk,
            "b_port": port("leaf-p1-r3", "Ethernet200").pk,
            "type": "400GBASE-DR4",
        },
        format="json",
    )
    assert right.status_code == 201, right.json()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"type": "800GBASE-SR8"}, "a"),
        ({"a_nic": "first", "type": "800GBASE-SR8"}, "a_nic"),
        ({"type": "carrier-pigeon"}, "type"),
        ({"length_m": -3, "type": "800GBASE-SR8"}, "a"),
    ],
)
def test_bad_cable_input_names_the_field(sakuraone, operator_api, payload, field):
    before = Cable.objects.count()
    response = operator_api.post(f"{API}/cables/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert Cable.objects.count() == before


def test_a_cable_end_is_one_nic_or_one_port(sakuraone, operator_api):
    free_nic, free_port = nic("gpu001", "mlx5_3"), port("leaf-p1-r0", "Ethernet200")
    response = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": free_nic.pk,
            "a_port": free_port.pk,
            "b_port": port("storage-1", "Ethernet504").pk,
            "type": "800GBASE-SR8",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "one NIC (a_nic) or one port (a_port)" in response.json()["a"][0]


def test_cable_ends_cannot_change(sakuraone, operator_api):
    cable = Cable.objects.get(a_nic=nic("gpu001", "mlx5_0"))
    response = operator_api.patch(
        f"{API}/cables/{cable.pk}/",
        {"b_port": port("leaf-p1-r0", "Ethernet200").pk},
        format="json",
    )
    assert response.status_code == 400
    assert "cannot change" in response.json()["b_port"][0]
    cable.refresh_from_db()
    assert cable.b_port.name == "Ethernet0"


def test_recommissioning_a_cable_whose_end_was_reused_is_refused(sakuraone, operator_api):
    rail_nic = nic("gpu001", "mlx5_0")
    old = Cable.objects.get(a_nic=rail_nic)
    assert (
        operator_api.patch(
            f"{API}/cables/{old.pk}/", {"status": "decommissioned"}, format="json"
        ).status_code
        == 200
    )
    new = operator_api.post(
        f"{API}/cables/",
        {
            "a_nic": rail_nic.pk,
            "b_port": port("leaf-p1-r0", "Ethernet200").pk,
            "type": "400GBASE-DR4",
        },
        format="json",
    )
    assert new.status_code == 201, new.json()
    back = operator_api.patch(f"{API}/cables/{old.pk}/", {"status": "connected"}, format="json")
    assert back.status_code == 400
    assert "already in cable" in back.json()["a"][0]
    old.refresh_from_db()
    assert old.status == "decommissioned"


def test_port_breakout_parent_must_be_on_the_same_switch(sakuraone, operator_api):
    response = operator_api.patch(
        f"{API}/ports/{port('leaf-p1-r0', 'Ethernet200').pk}/",
        {"breakout_parent": port("leaf-p1-r1", "Port1").pk},
        format="json",
    )
    assert response.status_code == 400
    assert "not on leaf-p1-r0" in response.json()["breakout_parent"][0]
    assert SwitchPort.objects.get(pk=port("leaf-p1-r0", "Ethernet200").pk).breakout_parent is None


def test_allocation_by_hostlist(sakuraone, operator_api, tenant_a):
    response = operator_api.post(
        f"{API}/allocations/",
        {
            "tenant": tenant_a.pk,
            "hostlist": "gpu[001-004]",
            "start": "2026-01-01T00:00:00Z",
            "purpose": "training",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert [brief["hostname"] for brief in response.json()["nodes"]] == [
        "gpu001",
        "gpu002",
        "gpu003",
        "gpu004",
    ]
    assert response.json()["tenant"]["slug"] == "tenant-a"
    unknown = operator_api.post(
        f"{API}/allocations/",
        {"tenant": tenant_a.pk, "hostlist": "gpu[099-101]", "start": "2026-01-01T00:00:00Z"},
        format="json",
    )
    assert unknown.status_code == 400
    assert unknown.json()["hostlist"] == ["unknown node(s): gpu101"]
    backwards = operator_api.post(
        f"{API}/allocations/",
        {
            "tenant": tenant_a.pk,
            "nodes": [node("gpu005").pk],
            "start": "2026-01-02T00:00:00Z",
            "end": "2026-01-01T00:00:00Z",
        },
        format="json",
    )
    assert backwards.status_code == 400
    assert "end" in backwards.json()
