"""Switch actions through the API and services: validation before queuing, permissions, blast
radius, idempotency. (Running them on a worker against the emulator: test_switch_actions_worker.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.utils import timezone

from fabric.services import (
    APPLY_QOS_ACTION,
    LEAF_MAINTENANCE_ACTION,
    PORT_ADMIN_ACTION,
    SAVE_CONFIG_ACTION,
)
from inventory.models import NIC, Cable, CableStatus, Node, Pod, Switch, SwitchPort
from portal.models import Action, AuditEntry, Role

pytestmark = pytest.mark.django_db


@dataclass
class ActionInventory:
    pod: Pod
    leaf: Switch
    spine: Switch
    nodes: list[Node]


def build_action_inventory(node_names: tuple[str, str] = ("gpu001", "gpu002")) -> ActionInventory:
    """leaf01 (pod1, rail 0): cage Port1 broken out 2x400G to gpu001 and gpu002 (rail 0), an
    800G uplink Ethernet8 to spine01, Ethernet12 (recorded in the inventory but absent on the
    emulated switch, whose Ethernet8 is a full 8-lane port) and an empty Ethernet16. A test
    against the shared real Slurm names its own two nodes instead of gpu001 and gpu002."""
    pod = Pod.objects.create(name="pod1")
    leaf = Switch.objects.create(hostname="leaf01", role=Switch.Role.LEAF, pod=pod, rail=0,
                                 management_address="10.254.1.1", credentials_ref="sonic/leaf",
                                 status="active")
    spine = Switch.objects.create(hostname="spine01", role=Switch.Role.SPINE,
                                  management_address="10.254.0.1", credentials_ref="sonic/spine",
                                  status="active")
    cage = SwitchPort.objects.create(switch=leaf, name="Port1", index=0, breakout_mode="2x400G")
    halves = [
        SwitchPort.objects.create(switch=leaf, name=name, index=index, speed_gbps=400, lanes=4,
                                  breakout_parent=cage, alias=alias)
        for name, index, alias in (("Ethernet0", 0, "Eth1/1(Port1)"),
                                   ("Ethernet4", 4, "Eth1/2(Port1)"))
    ]
    uplink = SwitchPort.objects.create(switch=leaf, name="Ethernet8", index=8)
    SwitchPort.objects.create(switch=leaf, name="Ethernet12", index=12)
    SwitchPort.objects.create(switch=leaf, name="Ethernet16", index=16)
    spine_port = SwitchPort.objects.create(switch=spine, name="Ethernet0", index=0)
    Cable.objects.create(a_port=uplink, b_port=spine_port, type=Cable.Type.SR8_800G,
                         status=CableStatus.CONNECTED)
    nodes = []
    for hostname, port in zip(node_names, halves, strict=True):
        node = Node.objects.create(hostname=hostname, pod=pod, status="active")
        nic = NIC.objects.create(node=node, device="mlx5_0", role=NIC.Role.RAIL, rail=0)
        Cable.objects.create(a_nic=nic, b_port=port, type=Cable.Type.BREAKOUT_2DR4_800G,
                             status=CableStatus.CONNECTED, label=f"rail0-{hostname}")
        nodes.append(node)
    return ActionInventory(pod, leaf, spine, nodes)


@pytest.fixture
def inventory() -> ActionInventory:
    return build_action_inventory()


def switch_url(switch: Switch, path: str) -> str:
    return f"/api/fabric/switches/{switch.pk}/{path}/"


def test_port_shutdown_is_queued_as_an_action_with_the_nodes_behind_it(operator_api, inventory):
    response = operator_api.post(
        switch_url(inventory.leaf, "ports/admin"),
        {"ports": ["Ethernet4", "Ethernet0"], "state": "down", "reason": "replace optic"},
        format="json",
    )
    assert response.status_code == 202, response.content
    assert response["Location"].endswith(f"/api/actions/{response.data['id']}/")
    action = Action.objects.get(pk=response.data["id"])
    assert action.kind == PORT_ADMIN_ACTION
    assert action.status == "queued"
    assert action.target == "leaf01 Ethernet4,Ethernet0"
    assert action.parameters == {
        "switch_id": inventory.leaf.pk, "switch": "leaf01", "ports": ["Ethernet4", "Ethernet0"],
        "up": False, "nodes": ["gpu001", "gpu002"],
    }
    assert action.requested_by == operator_api.user
    assert AuditEntry.objects.filter(object_type="portal.action", object_id=str(action.pk),
                                     note="requested: replace optic").exists()


def test_an_unknown_port_is_a_400_naming_it_and_nothing_is_queued(operator_api, inventory):
    response = operator_api.post(
        switch_url(inventory.leaf, "ports/admin"),
        {"ports": ["Ethernet0", "Ethernet999"], "state": "down", "reason": "x"}, format="json",
    )
    assert response.status_code == 400
    assert "Ethernet999 is not a port of leaf01." in str(response.json())
    # The spine's Ethernet0 exists, but not on this switch; a cage needs its halves named.
    response = operator_api.post(
        switch_url(inventory.spine, "ports/admin"),
        {"ports": ["Ethernet4"], "state": "down", "reason": "x"}, format="json",
    )
    assert response.status_code == 400
    response = operator_api.post(
        switch_url(inventory.leaf, "ports/admin"),
        {"ports": ["Port1"], "state": "down", "reason": "x"}, format="json",
    )
    assert response.status_code == 400
    assert "broken-out cage" in str(response.json())
    assert not Action.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"ports": ["Ethernet0"], "state": "down"}, "reason"),
    ({"ports": ["Ethernet0"], "state": "down", "reason": "   "}, "reason"),
    ({"ports": [], "state": "down", "reason": "x"}, "ports"),
    ({"ports": ["Ethernet0"], "state": "sideways", "reason": "x"}, "state"),
    ({"ports": ["Ethernet0"], "state": "down", "reason": "x", "force": True}, "force"),
])
def test_bad_bodies_are_400_naming_the_field(operator_api, inventory, body, field):
    response = operator_api.post(switch_url(inventory.leaf, "ports/admin"), body, format="json")
    assert response.status_code == 400
    assert field in str(response.json())
    assert not Action.objects.exists()


def test_a_switch_without_an_address_cannot_be_acted_on(operator_api, inventory):
    inventory.leaf.management_address = None
    inventory.leaf.save()
    response = operator_api.post(switch_url(inventory.leaf, "save"), {"reason": "x"},
                                 format="json")
    assert response.status_code == 400
    assert "no management address" in str(response.json())


@pytest.mark.parametrize("role, expected", [
    (Role.ADMIN, 202), (Role.OPERATOR, 202), (Role.ONCALL, 403), (Role.VIEWER, 403),
    (Role.TENANT_ADMIN, 403),
])
def test_only_admins_and_operators_act_on_switches(api_as, inventory, role, expected):
    client = api_as(role)
    requests = [
        (switch_url(inventory.leaf, "ports/admin"),
         {"ports": ["Ethernet8"], "state": "up", "reason": "r"}),
        (switch_url(inventory.leaf, "save"), {"reason": "r"}),
        (switch_url(inventory.leaf, "qos"), {"reason": "r"}),
        (switch_url(inventory.leaf, "maintenance"), {"reason": "r", "report_only": True}),
        (f"/api/fabric/pods/{inventory.pod.pk}/qos/", {"reason": "r"}),
    ]
    for url, body in requests:
        assert client.post(url, body, format="json").status_code == expected, url
    assert Action.objects.count() == (len(requests) if expected == 202 else 0)


def test_blast_radius_lists_nodes_rails_and_cables(api_as, inventory):
    client = api_as(Role.VIEWER)
    Node.objects.filter(hostname="gpu002").update(slurm_state="MIXED")
    response = client.get(switch_url(inventory.leaf, "blast-radius"), {"ports": "Ethernet4"})
    assert response.status_code == 200
    body = response.json()
    assert body["nodes"] == ["gpu002"] and body["rails"] == [0]
    assert body["links"] == [{"port": "Ethernet4", "node": "gpu002", "node_slurm_state": "MIXED",
                              "nic": "mlx5_0", "rail": 0,
                              "cable_id": body["links"][0]["cable_id"],
                              "cable_label": "rail0-gpu002"}]
    everything = client.get(switch_url(inventory.leaf, "blast-radius")).json()
    assert everything["ports"] == ["Ethernet0", "Ethernet4"]
    assert everything["nodes_hostlist"] == "gpu[001-002]"
    assert client.get(switch_url(inventory.leaf, "blast-radius"),
                      {"ports": "Ethernet77"}).status_code == 400
    assert api_as(Role.TENANT_ADMIN).get(switch_url(inventory.leaf, "blast-radius")
                                         ).status_code == 403


def test_leaf_maintenance_queues_the_drain_first_in_the_same_request(operator_api, inventory):
    response = operator_api.post(switch_url(inventory.leaf, "maintenance"),
                                 {"reason": "swap PSU"}, format="json")
    assert response.status_code == 202
    maintenance = Action.objects.get(pk=response.data["id"])
    assert maintenance.kind == LEAF_MAINTENANCE_ACTION
    drain = Action.objects.get(pk=maintenance.parameters["drain_action_id"])
    assert drain.kind == "slurm.drain"
    assert drain.parameters["nodes"] == ["gpu001", "gpu002"]
    assert drain.reason == "maintenance of leaf01: swap PSU"
    assert maintenance.parameters["ports"] == ["Ethernet0", "Ethernet4"]
    # A spine is not a leaf.
    response = operator_api.post(switch_url(inventory.spine, "maintenance"),
                                 {"reason": "x"}, format="json")
    assert response.status_code == 400 and "spine" in str(response.json())


def test_the_same_idempotency_key_returns_the_first_action(operator_api, inventory):
    url = switch_url(inventory.leaf, "maintenance")
    first = operator_api.post(url, {"reason": "swap PSU"}, format="json",
                              HTTP_IDEMPOTENCY_KEY="maint-1")
    again = operator_api.post(url, {"reason": "swap PSU"}, format="json",
                              HTTP_IDEMPOTENCY_KEY="maint-1")
    assert first.status_code == again.status_code == 202
    assert first.data["id"] == again.data["id"]
    assert Action.objects.filter(kind="slurm.drain").count() == 1


def test_pod_qos_is_one_action_over_the_pods_switches_with_table_15(operator_api, inventory):
    response = operator_api.post(f"/api/fabric/pods/{inventory.pod.pk}/qos/",
                                 {"reason": "roll out Table 15"}, format="json")
    assert response.status_code == 202
    action = Action.objects.get(pk=response.data["id"])
    assert action.kind == APPLY_QOS_ACTION
    assert action.target == "pod pod1"
    assert action.parameters["switches"] == [{"id": inventory.leaf.pk, "hostname": "leaf01"}]
    profile = action.parameters["profile"]
    assert (profile["ecn_min_bytes"], profile["ecn_max_bytes"]) == (2097152, 10485760)
    assert profile["ecn_mark_probability_percent"] == 1
    assert profile["pfc_priorities"] == [3]
    assert profile["pfc_xoff_bytes"] == 36_570_285
    bad = operator_api.post(switch_url(inventory.leaf, "qos"),
                            {"reason": "x", "profile": "LOSSY"}, format="json")
    assert bad.status_code == 400 and "profile" in str(bad.json())


def test_save_is_queued(operator_api, inventory):
    response = operator_api.post(switch_url(inventory.leaf, "save"), {"reason": "persist"},
                                 format="json")
    assert response.status_code == 202
    assert Action.objects.get(pk=response.data["id"]).kind == SAVE_CONFIG_ACTION


def test_unknown_switch_is_404(operator_api, inventory):
    response = operator_api.post("/api/fabric/switches/999999/save/", {"reason": "x"},
                                 format="json")
    assert response.status_code == 404


# -- confirmation pages --------------------------------------------------------------------------


@pytest.fixture
def operator_browser(client, make_user):
    client.force_login(make_user(Role.OPERATOR))
    return client


def test_port_page_shows_the_nodes_and_rails_behind_the_selected_ports(operator_browser,
                                                                       inventory):
    from django.urls import reverse

    url = reverse("fabric:port-admin", args=[inventory.leaf.pk])
    page = operator_browser.get(url, {"ports": ["Ethernet4", "Ethernet8"]})
    assert page.status_code == 200
    radius = page.context["radius"]
    assert radius.nodes == ("gpu002",) and radius.rails == (0,)
    html = page.content.decode()
    assert "gpu002" in html and "rail0-gpu002" in html
    assert 'name="ports" value="Ethernet4"' in html  # carried into the confirm form

    missing_reason = operator_browser.post(url, {"ports": ["Ethernet4"], "state": "down",
                                                 "reason": ""})
    assert missing_reason.status_code == 400
    assert "A reason is required" in missing_reason.content.decode()
    unknown = operator_browser.post(url, {"ports": ["Ethernet99"], "state": "down",
                                          "reason": "x"})
    assert unknown.status_code == 400
    assert "Ethernet99 is not a port of leaf01." in unknown.content.decode()
    assert not Action.objects.exists()

    confirmed = operator_browser.post(url, {"ports": ["Ethernet4"], "state": "down",
                                            "reason": "replace optic"})
    action = Action.objects.get(kind=PORT_ADMIN_ACTION)
    assert confirmed.status_code == 302
    assert confirmed["Location"] == reverse("action-detail", args=[action.pk])
    assert action.parameters["ports"] == ["Ethernet4"] and action.parameters["up"] is False


def test_maintenance_page_defaults_to_report_only(operator_browser, inventory):
    from django.urls import reverse

    url = reverse("fabric:leaf-maintenance", args=[inventory.leaf.pk])
    page = operator_browser.get(url)
    assert page.status_code == 200
    assert page.context["radius"].nodes == ("gpu001", "gpu002")
    operator_browser.post(url, {"reason": "plan", "mode": "report"})
    assert Action.objects.get().parameters["report_only"] is True
    operator_browser.post(url, {"reason": "go", "mode": "drain"})
    assert Action.objects.filter(kind="slurm.drain").count() == 1


def test_maintenance_pages_shut_under_jobs_only_with_a_reason_and_end_only_one_that_began(
    operator_browser, inventory
):
    from django.urls import reverse

    url = reverse("fabric:leaf-maintenance", args=[inventory.leaf.pk])
    end_url = reverse("fabric:maintenance-end", args=[inventory.leaf.pk])
    assert operator_browser.post(end_url, {"reason": "done"}).status_code == 409
    refused = operator_browser.post(url, {"reason": "go", "mode": "drain",
                                          "shut_under_running_jobs": "1"})
    assert refused.status_code == 400
    assert "shut under running jobs" in refused.content.decode()
    assert not Action.objects.exists()
    operator_browser.post(url, {"reason": "go", "mode": "drain", "shut_under_running_jobs": "1",
                                "force_reason": "PSU smoking"})
    start = Action.objects.get(kind=LEAF_MAINTENANCE_ACTION)
    assert start.parameters["force_reason"] == "PSU smoking"
    # Still starting: the end asks to cancel the start first.
    still = operator_browser.post(end_url, {"reason": "done"})
    assert still.status_code == 409 and "cancel that Action first" in still.content.decode()


@pytest.mark.parametrize("name", ["fabric:switch-qos", "fabric:switch-save", "fabric:pod-qos"])
def test_qos_and_save_pages_queue_their_action(operator_browser, inventory, name):
    from django.urls import reverse

    subject = inventory.pod if name == "fabric:pod-qos" else inventory.leaf
    url = reverse(name, args=[subject.pk])
    page = operator_browser.get(url)
    assert page.status_code == 200
    if name != "fabric:switch-save":
        assert "36570285" in page.content.decode()  # the Table 15 values are shown
    response = operator_browser.post(url, {"reason": "maintenance window"})
    assert response.status_code == 302
    assert Action.objects.get().kind == (
        SAVE_CONFIG_ACTION if name == "fabric:switch-save" else APPLY_QOS_ACTION)


@pytest.mark.parametrize("role", [Role.ONCALL, Role.VIEWER, Role.TENANT_ADMIN])
def test_pages_refuse_roles_that_may_not_act(client, make_user, inventory, role):
    from django.urls import reverse

    client.force_login(make_user(role))
    for name in ("fabric:port-admin", "fabric:leaf-maintenance", "fabric:switch-qos",
                 "fabric:switch-save"):
        url = reverse(name, args=[inventory.leaf.pk])
        assert client.get(url).status_code == 403
        assert client.post(url, {"reason": "x"}).status_code == 403
    assert not Action.objects.exists()


def test_a_pod_wide_qos_action_holds_its_lease_longer_than_one_switch(operator_api, inventory):
    from portal.actions.registry import get_action_handler

    Switch.objects.create(hostname="leaf02", role=Switch.Role.LEAF, pod=inventory.pod, rail=1,
                          management_address="10.254.1.2")
    response = operator_api.post(f"/api/fabric/pods/{inventory.pod.pk}/qos/", {"reason": "r"},
                                 format="json")
    single = operator_api.post(switch_url(inventory.leaf, "qos"), {"reason": "r"}, format="json")
    handler = get_action_handler(APPLY_QOS_ACTION)
    pod_lease = handler.lease_for(Action.objects.get(pk=response.data["id"]))
    assert pod_lease == 2 * handler.lease_for(Action.objects.get(pk=single.data["id"]))


# -- the switch's own pages carry its actions ----------------------------------


def _post_form(html: str) -> str:
    start = html.index('<form method="post" class="stack" id="confirm-form">')
    return html[start:html.index("</form>", start)]


def test_the_fabric_switch_page_offers_each_ports_shut_and_the_switch_actions(
        operator_browser, inventory):
    from django.urls import reverse

    html = operator_browser.get("/fabric/switches/leaf01/").content.decode()
    actions = html[html.index('id="actions-title"'):html.index('id="chart-title"')]
    for name in ("fabric:port-admin", "fabric:switch-qos", "fabric:switch-save",
                 "fabric:leaf-maintenance"):
        assert f'href="{reverse(name, args=[inventory.leaf.pk])}"' in actions, name
    port_admin = reverse("fabric:port-admin", args=[inventory.leaf.pk])
    row = html[html.index('id="port-Ethernet4"'):]
    row = row[:row.index("</tr>")]
    assert f'href="{port_admin}?ports=Ethernet4&amp;state=down">Shut…</a>' in row


def test_a_viewer_sees_no_switch_action_links(client, make_user, inventory):
    client.force_login(make_user(Role.VIEWER))
    html = client.get("/fabric/switches/leaf01/").content.decode()
    assert "/ports/admin/" not in html and "are for administrators and operators" in html


def test_one_confirmation_queues_the_port_picked_from_the_row(operator_browser, inventory):
    from django.urls import reverse

    url = reverse("fabric:port-admin", args=[inventory.leaf.pk])
    page = operator_browser.get(url, {"ports": "Ethernet4", "state": "down"}).content.decode()
    form = _post_form(page)
    # The checked port is a field of the form that confirms, so Confirm sends it.
    assert 'name="ports" value="Ethernet4" id="port-Ethernet4" checked' in form
    assert 'name="ports" value="Ethernet0" id="port-Ethernet0">' in form
    # Confirm is the form's default button (Enter presses it), the preview comes after it.
    assert form.index(">Confirm</button>") < form.index('name="preview"')
    # Checking another port and asking what is behind it queues nothing and keeps the reason.
    preview = operator_browser.post(url, {"ports": ["Ethernet4", "Ethernet0"], "state": "down",
                                          "reason": "optic swap", "preview": "1"})
    assert preview.status_code == 200 and not Action.objects.exists()
    assert preview.context["radius"].nodes == ("gpu001", "gpu002")
    assert 'value="optic swap"' in preview.content.decode()
    confirmed = operator_browser.post(url, {"ports": ["Ethernet0"], "state": "down",
                                            "reason": "optic swap"})
    assert confirmed.status_code == 302
    assert Action.objects.get(kind=PORT_ADMIN_ACTION).parameters["ports"] == ["Ethernet0"]


def test_the_inventory_switch_page_points_at_port_links_that_exist(operator_browser, inventory):
    html = operator_browser.get("/inventory/switches/leaf01/").content.decode()
    assert "Shut/Start…</em> link in the ports table" not in html
    assert 'href="/fabric/switches/leaf01/#ports-title"' in html
    assert "Shut…</a>" in operator_browser.get("/fabric/switches/leaf01/").content.decode()


@pytest.mark.parametrize(("state", "faces", "condition"), [
    ("U", "nic", "up"), ("X", "nic", "admin-down"), ("D", "switch", "oper-down"),
    ("X", "", "unused"), ("D", "", "unused"), ("U", "", "up"), ("?", "nic", "unpolled"),
    # N: the switch reports no state (intfutil's N/A); it may carry a link, cable or not.
    ("N", "nic", "unknown"), ("N", "", "unknown"),
])
def test_a_shut_port_is_told_apart_from_an_unused_one(state, faces, condition):
    from fabric.selectors import HeatCell
    from fabric.templatetags.fabric_tags import port_condition

    assert port_condition(HeatCell("Ethernet0", state, None, faces)) == condition


def test_the_switch_page_marks_each_ports_condition(operator_browser, inventory):
    from fabric.models import PortCounterLatest

    ports = {port.name: port for port in inventory.leaf.ports.all()}
    for name, admin_up, oper_up in (("Ethernet0", False, False), ("Ethernet16", False, False),
                                    ("Ethernet4", True, False), ("Ethernet8", None, None)):
        PortCounterLatest.objects.create(port=ports[name], admin_up=admin_up, oper_up=oper_up,
                                         sampled_at=timezone.now())
    html = operator_browser.get("/fabric/switches/leaf01/").content.decode()

    def condition(name):
        row = html[html.index(f'id="port-{name}"'):]
        return row[row.index('data-condition="') + 16:].split('"', 1)[0]

    assert [condition(name) for name in ("Ethernet0", "Ethernet16", "Ethernet4", "Ethernet12",
                                         "Ethernet8")] \
        == ["admin-down", "unused", "oper-down", "unpolled", "unknown"]
