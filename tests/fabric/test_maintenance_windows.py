"""Maintenance windows at service and API level on the emulated fabric (issue 26 item 2): bad
windows refused naming the field, the periodic run starting a window at its time and ending it
at its end so that exactly the ports it shut come back and exactly the nodes it drained resume,
and no fault ticket for the planned work. The Slurm reservation itself is proven against the
real slurmctld in tests/fabric/test_maintenance_windows_real_slurm.py.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from console.dashboard import cluster_grid
from fabric.drivers.base import get_fabric_driver
from fabric.maintenance_windows import (
    WINDOW_RESERVATION_ACTION,
    create_maintenance_window,
    end_maintenance_window,
    run_due_windows,
    start_maintenance_window,
)
from fabric.models import Maintenance, MaintenanceWindow
from fabric.services import host_facing_ports
from fabric.targets import switch_target
from faults.models import FaultTicket
from inventory.models import Node, Switch
from jobs.drivers.base import SlurmNodeState
from portal.errors import Conflict
from portal.models import Action, ActionStatus, Role
from portal.services.actions import run_action
from tests.fabric.test_maintenance import LEAF, NODES, FakeSlurm, admin_states

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: a small fleet and the emulated fabric
pytestmark = pytest.mark.django_db

URL = "/api/fabric/maintenance-windows/"


@pytest.fixture
def slurm(monkeypatch):
    fake = FakeSlurm()
    monkeypatch.setattr("jobs.drain_progress.get_slurm_driver", lambda: fake)
    monkeypatch.setattr("fabric.action_handlers.get_slurm_driver", lambda: fake)
    return fake


@pytest.fixture
def leaf(small_fleet, emulated) -> Switch:
    return Switch.objects.get(hostname=LEAF)


def body(hours_ahead: float = 1, length: float = 2, **fields) -> dict:
    start = timezone.now() + timedelta(hours=hours_ahead)
    return {"planned_start": start.isoformat(),
            "planned_end": (start + timedelta(hours=length)).isoformat(),
            "switches": [LEAF], "reason": "PSU swap", **fields}


def test_bad_windows_are_400s_naming_the_field_and_viewers_only_read(leaf, api_as):
    operator = api_as(Role.OPERATOR)
    spine = Switch.objects.exclude(role__in=[Switch.Role.LEAF, Switch.Role.STORAGE]).first()
    refused = {
        "planned_end": body(length=-1),
        "switches": body(switches=["leaf-nowhere"]),
        "nodes": body(switches=[], nodes="gpu[900-901]"),
        "reason": body(reason=" "),
    }
    if spine is not None:
        refused["switches"] = body(switches=[spine.hostname])
    for field, request in refused.items():
        answer = operator.post(URL, request, format="json")
        assert answer.status_code == 400, (field, answer.content)
        assert field in answer.json(), (field, answer.json())
    assert not MaintenanceWindow.objects.exists()

    first = operator.post(URL, body(), format="json")
    assert first.status_code == 201, first.content
    assert first.json()["status"] == "scheduled"
    assert first.json()["reservation"] == f"portal-maint-{first.json()['id']}"
    overlapping = operator.post(URL, body(hours_ahead=2), format="json")
    assert overlapping.status_code == 400
    assert f"#{first.json()['id']}" in overlapping.json()["switches"][0]
    later = operator.post(URL, body(hours_ahead=5), format="json")
    assert later.status_code == 201

    viewer = api_as(Role.VIEWER)
    assert viewer.get(URL).status_code == 200
    assert len(viewer.get(URL).json()["results"]) == 2
    assert viewer.post(URL, body(hours_ahead=9), format="json").status_code == 403
    window_id = first.json()["id"]
    assert viewer.post(f"{URL}{window_id}/cancel/").status_code == 403

    cancelled = operator.post(f"{URL}{window_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert operator.post(f"{URL}{window_id}/start/").status_code == 409
    # Creating and cancelling each made Slurm's reservation follow the window, by Action.
    assert Action.objects.filter(kind=WINDOW_RESERVATION_ACTION,
                                 parameters__window_id=window_id).count() == 2


def test_at_its_time_it_starts_and_at_its_end_undoes_exactly_what_it_did_and_files_no_fault(
    leaf, slurm, make_user
):
    operator = make_user(Role.OPERATOR)
    ports = host_facing_ports(leaf)
    get_fabric_driver(switch_target(leaf)).set_port_admin([ports[0]], False)  # down before
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(planned_start=start, planned_end=start + timedelta(hours=2),
                                       switch_names=[LEAF], reason="PSU swap", owner=operator)
    assert set(NODES) <= set(window.reserved_nodes)
    assert run_due_windows(now=start - timedelta(minutes=1)).started == []

    assert run_due_windows(now=start).started == [window.pk]
    window.refresh_from_db()
    assert window.status == "running"
    maintenance = Maintenance.objects.get(window=window)
    Action.objects.filter(pk=maintenance.start_action.parameters["drain_action_id"]).update(
        status=ActionStatus.SUCCEEDED)
    assert run_action(action_id=maintenance.start_action_id) == "succeeded"
    maintenance.refresh_from_db()
    assert maintenance.shut_ports == ports[1:]
    assert admin_states(leaf) == {"down"}

    ran = run_due_windows(now=window.planned_end)
    assert ran.ended == [window.pk]
    maintenance.refresh_from_db()
    end = maintenance.end_action
    assert end.parameters["switches"][0]["ports"] == ports[1:]
    assert run_action(action_id=end.pk) == "succeeded"
    assert admin_states(leaf, [ports[0]]) == {"down"}
    assert admin_states(leaf, ports[1:]) == {"up"}
    assert sorted(slurm.resumed) == sorted(maintenance.nodes_to_resume)
    window.refresh_from_db()
    assert window.status == "ended"
    assert not FaultTicket.objects.exists()


def test_the_calendar_plans_and_lists_windows_and_the_node_page_badges_a_running_one(
    leaf, client, make_user
):
    client.force_login(make_user(Role.OPERATOR))
    start = (timezone.now() + timedelta(days=1)).replace(second=0, microsecond=0)
    form = {"planned_start": start.strftime("%Y-%m-%dT%H:%M"),
            "planned_end": (start - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
            "switches": LEAF, "nodes": "", "reason": "optics"}
    refused = client.post("/fabric/maintenance/", form)
    assert refused.status_code == 400
    assert "planned_end: The planned end must be after the planned start." in (
        refused.content.decode())
    form["planned_end"] = (start + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    assert client.post("/fabric/maintenance/", form).status_code == 302
    window = MaintenanceWindow.objects.get()
    assert window.planned_start == start

    page = client.get("/fabric/maintenance/").content.decode()
    assert f'data-window="{window.pk}"' in page and "scheduled" in page and LEAF in page
    assert 'href="/fabric/maintenance/"' in page  # the header links the calendar
    node_page = client.get("/inventory/nodes/gpu001/").content.decode()
    assert "node-maintenance-badge" not in node_page

    assert client.post(f"/fabric/maintenance/{window.pk}/start/").status_code == 302
    window.refresh_from_db()
    assert window.status == "running"
    node_page = client.get("/inventory/nodes/gpu001/").content.decode()
    assert "node-maintenance-badge" in node_page and f"window #{window.pk}" in node_page


def test_a_window_over_two_switches_ends_as_one_action_undoing_exactly_what_it_did(
    leaf, slurm, make_user
):
    """Issue 26 item 2: "ending it starts exactly the ports it shut and resumes exactly the
    nodes it drained, nothing else, as one Action" (on main: one end Action per switch)."""
    operator = make_user(Role.OPERATOR)
    other = Switch.objects.get(hostname="leaf-p1-r4")
    down_before = {leaf: host_facing_ports(leaf)[0], other: host_facing_ports(other)[-1]}
    for switch, port in down_before.items():
        get_fabric_driver(switch_target(switch)).set_port_admin([port], False)
    Node.objects.filter(hostname="gpu003").update(slurm_state="drained")  # by someone else
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(
        planned_start=start, planned_end=start + timedelta(hours=2), reason="optics",
        switch_names=[LEAF, other.hostname], owner=operator)
    start_maintenance_window(window, requested_by=operator)
    for maintenance in Maintenance.objects.filter(window=window):
        Action.objects.filter(pk=maintenance.start_action.parameters["drain_action_id"]).update(
            status=ActionStatus.SUCCEEDED)
        assert run_action(action_id=maintenance.start_action_id) == "succeeded"
    assert admin_states(leaf) == admin_states(other) == {"down"}
    before = Action.objects.count()

    end = end_maintenance_window(window, requested_by=operator)
    assert Action.objects.count() == before + 2  # the end and the reservation's release
    assert not Action.objects.filter(kind="fabric.maintenance_end").exists()
    window.refresh_from_db()
    assert window.end_action == end and window.status == "ended"
    assert {m.end_action_id for m in window.maintenances.all()} == {end.pk}
    assert {entry["switch"]: entry["ports"] for entry in end.parameters["switches"]} == {
        switch.hostname: [p for p in host_facing_ports(switch) if p != down_before[switch]]
        for switch in (leaf, other)}
    assert end.parameters["kept_drained"] == {"gpu003": "drained before the maintenance"}

    assert run_action(action_id=end.pk) == "succeeded"
    for switch, port in down_before.items():
        assert admin_states(switch, [port]) == {"down"}  # down before, stays down
        assert admin_states(switch, [p for p in host_facing_ports(switch)
                                     if p != port]) == {"up"}
    assert slurm.resumed == ["gpu001", "gpu002", "gpu004"]  # once each; gpu003 stays drained
    assert set(window.maintenances.values_list("status", flat=True)) == {"ended"}

    api = APIClient()
    api.force_authenticate(operator)
    answer = api.get(f"{URL}{window.pk}/").json()
    assert answer["end_action"] == end.pk
    assert {m["end_action"] for m in answer["maintenances"]} == {end.pk}


def test_nodes_named_on_their_own_are_drained_waited_for_and_exactly_those_resumed(
    small_fleet, slurm, make_user
):
    """Issue 26 item 2's scope "switches, nodes, hostlist": on main a node named on its own was
    held by the reservation only, never drained at the start nor resumed at the end."""
    operator = make_user(Role.OPERATOR)
    Node.objects.filter(hostname="gpu003").update(slurm_state="drained")  # by someone else
    slurm.run_job("1098", "gpu002")
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(
        planned_start=start, planned_end=start + timedelta(hours=2), reason="BIOS update",
        hostlist="gpu[001-003]", owner=operator)
    start_maintenance_window(window, requested_by=operator)
    window.refresh_from_db()
    assert window.nodes_drained_before == ["gpu003"]
    waiting = window.nodes_action
    assert waiting.parameters["nodes"] == ["gpu001", "gpu002", "gpu003"]
    drain = Action.objects.get(pk=waiting.parameters["drain_action_id"])
    assert (drain.kind, drain.parameters["nodes"]) == ("slurm.drain", ["gpu001", "gpu002"])

    assert run_action(action_id=waiting.pk).startswith("waiting")
    Action.objects.filter(pk=drain.pk).update(status=ActionStatus.SUCCEEDED)
    Action.objects.filter(pk=waiting.pk).update(not_before=timezone.now())
    assert run_action(action_id=waiting.pk).startswith("waiting")
    waiting.refresh_from_db()
    assert waiting.result["progress"] == "waiting for 1 job (1098) on 1 node (gpu002)"
    with pytest.raises(Conflict):  # its nodes are still waited for: nothing changes
        end_maintenance_window(window, requested_by=operator)
    window.refresh_from_db()
    assert window.status == "running" and window.end_action is None

    slurm.running.clear()
    slurm.states["gpu002"] = SlurmNodeState(name="gpu002", state="idle", flags=("DRAIN",))
    Action.objects.filter(pk=waiting.pk).update(not_before=timezone.now())
    assert run_action(action_id=waiting.pk) == "succeeded"
    end = end_maintenance_window(window, requested_by=operator)
    assert end.parameters["switches"] == []
    assert end.parameters["nodes"] == ["gpu001", "gpu002"]
    assert end.parameters["kept_drained"] == {"gpu003": "drained before the maintenance"}
    assert run_action(action_id=end.pk) == "succeeded"
    assert slurm.resumed == ["gpu001", "gpu002"]


def test_while_a_window_runs_the_grid_the_switch_pages_and_the_node_page_header_badge_it(
    leaf, client, make_user, settings
):
    """Issue 26 item 2: "badges on the switch, node and grid while it runs". On main only the
    node page had one, below its panels; the grid and both switch pages had none."""
    operator = make_user(Role.OPERATOR)
    client.force_login(operator)
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(planned_start=start, planned_end=start + timedelta(hours=2),
                                       switch_names=[LEAF], reason="optics", owner=operator)
    switch_pages = [f"/inventory/switches/{LEAF}/", f"/fabric/switches/{LEAF}/"]
    assert "data-maintenance=" not in client.get("/").content.decode()
    for url in switch_pages:
        assert "switch-window-badge" not in client.get(url).content.decode()

    start_maintenance_window(window, requested_by=operator)
    cells = {cell.hostname: cell for pod in cluster_grid(user=operator).pods
             for rack in pod.racks for cell in rack.cells}
    held = {name for name, cell in cells.items() if cell.maintenance_window == window.pk}
    assert held == set(window.reserved_nodes) and set(cells) - held  # only the leaf's nodes
    assert f"maintenance window #{window.pk}" in cells["gpu001"].label
    dashboard = client.get("/").content.decode()
    assert 'id="node-cell-gpu001" data-state=' in dashboard
    cell_html = dashboard.split('id="node-cell-gpu001"')[1].split(">")[0]
    assert f'data-maintenance="{window.pk}"' in cell_html
    assert f"maintenance window #{window.pk}" in cell_html

    for url in switch_pages:
        page = client.get(url).content.decode()
        assert "switch-window-badge" in page and f"window #{window.pk}" in page, url
        # In the page's header, before the first card, not somewhere below the ports.
        assert page.index("switch-window-badge") < page.index('class="grid-cards"'), url
    other = Switch.objects.get(hostname="leaf-p2-r3")
    assert "switch-window-badge" not in client.get(
        f"/inventory/switches/{other.hostname}/").content.decode()
    node_page = client.get("/inventory/nodes/gpu001/").content.decode()
    assert node_page.index("node-maintenance-badge") < node_page.index('class="grid-cards"')

    settings.DASHBOARD_AGGREGATE_ABOVE_NODES = 1  # the fleet's grid: a cell per pod
    grid = cluster_grid(user=operator)
    by_pod = {cell.pod: cell for cell in grid.aggregates}
    assert sorted(cell.in_maintenance for cell in by_pod.values()) == [0, len(held)]
    assert any(f"{len(held)} in maintenance" in cell.label for cell in by_pod.values())
    assert f'data-agg-maintenance="{len(held)}"' in client.get("/").content.decode()


def test_an_open_dashboard_is_told_when_a_window_starts_and_ends(
    small_fleet, slurm, make_user, monkeypatch
):
    """Issue 26 item 2, live: the grid gained its maintenance marks only on a reload. Starting
    and ending a window publish "maintenance.window" on "cluster" on commit (no tenant listed:
    a tenant admin is not told why nodes drain), and cluster.js re-reads the grid on it."""
    published = []
    monkeypatch.setattr(
        "fabric.maintenance_windows.publish",
        lambda group, event, payload, **scope: published.append((group, event, payload, scope)))
    operator = make_user(Role.OPERATOR)
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(
        planned_start=start, planned_end=start + timedelta(hours=2), reason="BIOS update",
        hostlist="gpu[001-002]", owner=operator)
    assert published == []  # planned, not running: nothing on the grid changes
    start_maintenance_window(window, requested_by=operator)
    scope = {"tenant_ids": [], "tenant_private": False}
    assert published == [("cluster", "maintenance.window",
                          {"window_id": window.pk, "status": "running"}, scope)]
    window.refresh_from_db()
    Action.objects.filter(pk=window.nodes_action_id).update(status=ActionStatus.SUCCEEDED)
    end_maintenance_window(window, requested_by=operator)
    assert published[1] == ("cluster", "maintenance.window",
                            {"window_id": window.pk, "status": "ended"}, scope)
    script = (Path(__file__).resolve().parents[2] / "static/js/cluster.js").read_text()
    assert 'addEventListener("live:maintenance.window"' in script


def test_a_switch_in_maintenance_links_it_instead_of_offering_another(leaf, client, make_user):
    """Issue 26: the switch pages offered "Leaf maintenance…" while that switch was already in
    a running maintenance (a second one is refused: one at a time per switch)."""
    operator = make_user(Role.OPERATOR)
    client.force_login(operator)
    offer = f'href="/fabric/switches/{leaf.pk}/maintenance/"'
    switch_pages = [f"/inventory/switches/{LEAF}/", f"/fabric/switches/{LEAF}/"]
    for url in switch_pages:
        page = client.get(url).content.decode()
        assert "Leaf maintenance…" in page and "switch-maintenance-running" not in page, url
    start = timezone.now() + timedelta(hours=1)
    window = create_maintenance_window(planned_start=start, planned_end=start + timedelta(hours=2),
                                       switch_names=[LEAF], reason="optics", owner=operator)
    start_maintenance_window(window, requested_by=operator)
    maintenance = Maintenance.objects.get(switch=leaf)
    for url in switch_pages:
        page = client.get(url).content.decode()
        assert "Leaf maintenance…" not in page and offer not in page, url
        running = page.split('id="switch-maintenance-running"')[1].split("</li>")[0]
        assert f'href="/actions/{maintenance.start_action_id}/"' in running, url
        assert f"maintenance window #{window.pk}" in running, url


def test_the_calendar_is_a_fixed_number_of_queries_however_many_windows(
    small_fleet, client, make_user, django_assert_max_num_queries
):
    """Issue 26: the calendar read each window's maintenances (and each one's switch) with a
    query of its own. One window or six with two maintenances each: the same page budget."""
    operator = make_user(Role.OPERATOR)
    client.force_login(operator)
    leaves = list(Switch.objects.filter(role=Switch.Role.LEAF).order_by("hostname")[:2])
    start = timezone.now() + timedelta(hours=1)

    def plan(number: int) -> None:
        window = MaintenanceWindow.objects.create(
            planned_start=start + timedelta(hours=3 * number),
            planned_end=start + timedelta(hours=3 * number + 2), reason=f"work {number}",
            owner=operator, reserved_nodes=["gpu001"], status=MaintenanceWindow.Status.ENDED)
        window.switches.set(leaves)
        for leaf in leaves:
            action = Action.objects.create(kind="fabric.leaf_maintenance", target=leaf.hostname,
                                           reason="work", status=ActionStatus.SUCCEEDED)
            Maintenance.objects.create(switch=leaf, window=window, reason="work",
                                       start_action=action, status=Maintenance.Status.ENDED)

    plan(0)
    with CaptureQueriesContext(connection) as one_window:
        assert client.get("/fabric/maintenance/").status_code == 200
    for number in range(1, 6):
        plan(number)
    with django_assert_max_num_queries(len(one_window)):
        page = client.get("/fabric/maintenance/").content.decode()
    assert page.count("data-window=") == 6
    assert page.count(f"{leaves[1].hostname}: ended") == 6
