"""The dashboard's cluster view: nodes by pod and rack with state letters, open fault marks and
running jobs, the summary counts, and what each role may see of them."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from console.dashboard import cluster_grid
from faults.models import FaultTicket
from inventory.models import GPU, Allocation, Node, Pod, Rack
from jobs.models import Job
from portal.models import Role
from portal.node_states import grid_state

pytestmark = pytest.mark.django_db


def make_nodes(count: int, *, pod_name: str = "p1", rack_name: str = "r01", start: int = 1):
    pod, _ = Pod.objects.get_or_create(name=pod_name)
    rack, _ = Rack.objects.get_or_create(name=rack_name, pod=pod)
    nodes = []
    for number in range(start, start + count):
        node = Node.objects.create(hostname=f"gpu{number:03d}", pod=pod, rack=rack)
        GPU.objects.bulk_create(GPU(node=node, index=index) for index in range(8))
        nodes.append(node)
    return nodes


def make_job(job_id: str, nodes, *, state: str = "RUNNING", tenant=None, user: str = "alice"):
    job = Job.objects.create(
        job_id=job_id,
        user=user,
        state=state,
        gpus=8 * len(nodes),
        node_count=len(nodes),
        tenant=tenant,
        source=Job.Source.SQUEUE,
        submit_time=timezone.now(),
    )
    job.nodes.set(nodes)
    return job


def make_ticket(node, *, status: str = "new", category: str = "gpu"):
    return FaultTicket.objects.create(
        node=node,
        status=status,
        category=category,
        summary=f"{category} fault on {node}",
        detected_at=timezone.now(),
    )


def all_cells(grid):
    return {cell.hostname: cell for pod in grid.pods for rack in pod.racks for cell in rack.cells}


def browser_for(make_user, role, tenant=None):
    user = make_user(role, tenant=tenant)
    browser = Client()
    assert browser.login(username=user.username, password="correct-horse-battery")
    return browser


@pytest.mark.parametrize(
    ("slurm_state", "expected"),
    [
        ("idle", "idle"),
        ("draining", "draining"),
        ("not_responding", "down"),
        ("", "unknown"),
        ("future", "unknown"),
        ("completing", "allocated"),
    ],
)
def test_grid_state_maps_slurm_words(slurm_state, expected):
    assert grid_state(slurm_state) == expected


def test_grid_groups_by_pod_and_rack_and_counts_states(make_user):
    nodes = make_nodes(3) + make_nodes(2, pod_name="p2", rack_name="r20", start=51)
    Node.objects.filter(pk=nodes[0].pk).update(slurm_state="drained", slurm_reason="XID 79")
    Node.objects.filter(pk=nodes[1].pk).update(slurm_state="idle")
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    assert [pod.name for pod in grid.pods] == ["p1", "p2"]
    assert [cell.hostname for cell in grid.pods[0].racks[0].cells] == ["gpu001", "gpu002", "gpu003"]
    assert grid.state_counts == {"drained": 1, "idle": 1, "unknown": 3}
    assert (grid.node_total, grid.gpu_total) == (5, 40)
    assert grid.pods[0].racks[0].cells[0].reason == "XID 79"


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.TENANT_ADMIN])
def test_grid_query_count_does_not_grow_with_nodes_jobs_or_tickets(make_user, tenant_a, role):
    user = make_user(role, tenant=tenant_a if role == Role.TENANT_ADMIN else None)
    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1))
    nodes = make_nodes(2)
    allocation.nodes.set(nodes)
    make_job("1", nodes[:1], tenant=tenant_a)
    make_ticket(nodes[0])
    cluster_grid(user=user)  # the user's role is looked up once and then cached on the user
    with CaptureQueriesContext(connection) as small:
        cluster_grid(user=user)
    more = make_nodes(20, start=10)
    allocation.nodes.add(*more)
    for number, node in enumerate(more, start=2):
        make_job(str(number), [node], tenant=tenant_a, user=f"user{number}")
        make_ticket(node, category="nic_transceiver")
    with CaptureQueriesContext(connection) as large:
        grid = cluster_grid(user=user)
    # 8: the running maintenance windows are one read more (issue 26, for a fabric reader).
    assert len(small) == len(large) <= 8
    assert len(all_cells(grid)) == 22 and grid.gpus_in_use == 21 * 8


def test_cells_carry_open_faults_and_running_jobs_and_the_summary_counts_them(make_user):
    nodes = make_nodes(4)
    make_job("4242", nodes[:2], user="alice")
    make_job("4243", nodes[1:2], user="bob")
    make_job("4100", nodes[2:3], state="PENDING")  # not running: not counted, not shown
    make_ticket(nodes[0], category="gpu")
    make_ticket(nodes[0], category="nvlink_nvswitch_pcie", status="mitigating")
    make_ticket(nodes[1], category="gpu", status="resolved")  # closed: no mark
    Node.objects.filter(pk=nodes[0].pk).update(slurm_state="mixed", slurm_reason="XID 79")
    grid = cluster_grid(user=make_user(Role.OPERATOR))
    cells = all_cells(grid)
    assert [cells[name].open_faults for name in ("gpu001", "gpu002", "gpu003")] == [2, 0, 0]
    assert cells["gpu002"].jobs_text == "4242 (alice), 4243 (bob)"
    assert cells["gpu003"].jobs == []
    assert cells["gpu001"].label == (
        "gpu001: mixed · reason: XID 79 · 2 open fault tickets · running job 4242 (alice)"
    )
    assert (grid.gpus_in_use, grid.gpu_total) == (24, 32)
    by_category = {category: count for category, _, count in grid.faults_by_category}
    assert by_category["gpu"] == 1 and by_category["nvlink_nvswitch_pcie"] == 1
    assert grid.open_fault_total == 2


def test_dashboard_page_shows_fault_marks_job_hover_and_summary(make_user):
    nodes = make_nodes(2)
    make_job("4242", nodes[:1], user="alice")
    make_ticket(nodes[1], category="nic_transceiver")
    html = browser_for(make_user, Role.OPERATOR).get("/").content.decode()
    assert 'title="gpu001: unknown · running job 4242 (alice)"' in html
    fault_cell = html.split('id="node-cell-gpu002"')[1].split("</a>")[0]
    assert '<span class="fault-mark" aria-label="open fault"></span>' in fault_cell
    assert 'id="gpus-in-use">8<' in html and 'id="gpus-total">16<' in html
    assert 'data-fault-count="nic_transceiver">1<' in html
    assert 'data-live-groups="faults"' in html and "css/cluster.css" in html


def test_dashboard_shows_cells_with_letters_and_reason(make_user):
    node = make_nodes(1)[0]
    Node.objects.filter(pk=node.pk).update(slurm_state="draining", slurm_reason="FT-3 NVLink")
    page = browser_for(make_user, Role.VIEWER).get("/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="node-cell-gpu001"' in html and 'data-state="draining"' in html
    assert "gpu001: draining · reason: FT-3 NVLink" in html
    assert 'data-live-groups="cluster"' in html and "js/cluster.js" in html
    assert "d draining" in html  # the legend names each state with its letter


def test_tenant_admin_grid_holds_only_their_allocated_nodes(make_user, tenant_a, tenant_b):
    ours, theirs = make_nodes(2), make_nodes(2, start=10)
    now = timezone.now()
    Allocation.objects.create(tenant=tenant_a, start=now - timedelta(days=1)).nodes.set(ours)
    Allocation.objects.create(tenant=tenant_b, start=now - timedelta(days=1)).nodes.set(theirs)
    grid = cluster_grid(user=make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    shown = [cell.hostname for pod in grid.pods for rack in pod.racks for cell in rack.cells]
    assert shown == ["gpu001", "gpu002"]
    html = browser_for(make_user, Role.TENANT_ADMIN, tenant_a).get("/").content.decode()
    assert "node-cell-gpu001" in html and "node-cell-gpu010" not in html


def test_tenant_admin_gets_no_fault_information_and_only_their_tenants_jobs(
    make_user, tenant_a, tenant_b
):
    nodes = make_nodes(2)
    now = timezone.now()
    Allocation.objects.create(tenant=tenant_a, start=now - timedelta(days=1)).nodes.set(nodes)
    make_job("500", nodes[:1], tenant=tenant_a, user="ours")
    # Tenant B's job on a node now allocated to A (a stale squeue row): A must not see it.
    make_job("501", nodes[1:], tenant=tenant_b, user="theirs")
    make_ticket(nodes[0], category="gpu")
    admin = make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    grid = cluster_grid(user=admin)
    cells = all_cells(grid)
    assert grid.faults_by_category is None and cells["gpu001"].open_faults == 0
    assert cells["gpu001"].jobs_text == "500 (ours)" and cells["gpu002"].jobs == []
    assert grid.gpus_in_use == 8
    html = browser_for(make_user, Role.TENANT_ADMIN, tenant_a).get("/").content.decode()
    assert "fault-mark" not in html and "Open fault tickets" not in html
    assert 'data-live-groups="faults"' not in html and "theirs" not in html


def test_viewer_sees_faults_but_no_jobs(make_user):
    nodes = make_nodes(1)
    make_job("600", nodes, user="alice")
    make_ticket(nodes[0])
    grid = cluster_grid(user=make_user(Role.VIEWER))
    cell = all_cells(grid)["gpu001"]
    assert (cell.open_faults, cell.jobs, grid.gpus_in_use) == (1, [], None)
    html = browser_for(make_user, Role.VIEWER).get("/").content.decode()
    assert 'id="gpus-in-use">—<' in html and "fault-mark" in html


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("IDLE+DRAIN", "drained"),
        ("MIXED+DRAIN", "draining"),
        ("down*", "down"),
        ("ALLOC", "allocated"),
        ("idle+not_responding", "down"),
    ],
)
def test_grid_state_reads_slurm_own_words_too(raw, expected):
    assert grid_state(raw) == expected


def test_the_node_page_and_the_grid_use_the_same_state_and_letter():
    from inventory.templatetags.inventory_tags import slurm_state_kind, slurm_state_letter

    for state in ("not_responding", "draining", "IDLE+DRAIN", "", "future"):
        assert slurm_state_kind(state) == grid_state(state)
    assert slurm_state_letter("not_responding") == "X"


def test_a_tenant_admins_gpus_in_use_never_exceed_the_gpus_they_see(make_user, tenant_a):
    """Not "GPUs in use 8 of 0": the tenant's job ran outside its allocation."""
    allocated, elsewhere = make_nodes(1), make_nodes(2, start=10)
    Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1)).nodes.set(
        allocated)
    make_job("700", elsewhere, tenant=tenant_a)  # 16 GPUs, none on the allocation
    make_job("701", [allocated[0], elsewhere[0]], tenant=tenant_a)  # 8 of its 16 on it
    grid = cluster_grid(user=make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    assert (grid.gpus_in_use, grid.gpu_total) == (8, 8)


def test_a_tenant_admin_sees_their_running_jobs_gpus_on_shared_nodes_too(
    make_user, tenant_a, tenant_b
):
    """Issue 26 item 6: "0 of 64" while the tenant's job ran on shared nodes. Their job's GPUs
    outside the allocation are said beside the figure (never added to it), theirs only."""
    allocated, shared = make_nodes(2), make_nodes(3, start=20)
    Allocation.objects.create(tenant=tenant_a, start=timezone.now() - timedelta(1)).nodes.set(
        allocated)
    make_job("800", shared[:2], tenant=tenant_a, user="ours")  # 16 GPUs, none on the allocation
    make_job("801", shared[2:], tenant=tenant_b, user="theirs")  # another tenant's: not counted
    make_job("802", shared[:1], tenant=tenant_a, state="COMPLETED")  # over: not counted
    admin = make_user(Role.TENANT_ADMIN, tenant=tenant_a)
    grid = cluster_grid(user=admin)
    assert (grid.gpus_in_use, grid.gpu_total, grid.gpus_in_use_elsewhere) == (0, 16, 16)
    html = browser_for(make_user, Role.TENANT_ADMIN, tenant_a).get("/").content.decode()
    elsewhere = html.split('id="gpus-in-use-elsewhere"')[1].split("</p>")[0]
    assert "<strong>16</strong> GPUs" in elsewhere and "gpu020" not in html and "theirs" not in html
    operator = cluster_grid(user=make_user(Role.OPERATOR))
    assert (operator.gpus_in_use, operator.gpus_in_use_elsewhere) == (24, 0)
