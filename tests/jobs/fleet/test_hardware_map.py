"""Job -> nodes -> GPUs -> rail NICs -> leaf ports on the SAKURAONE fleet, and the reverse:
the running jobs behind a switch or a port."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.cable_trace import trace_from_nic
from inventory.models import NIC, Node, Switch, SwitchPort
from jobs.models import Job
from jobs.selectors import job_hardware, jobs_behind_port, jobs_behind_switch
from portal.models import Role

pytestmark = pytest.mark.usefixtures("sakuraone")


def running_job(job_id: str, hostnames: list[str], tenant=None) -> Job:
    job = Job.objects.create(
        job_id=job_id,
        name="cpt",
        user="tanaka",
        account="sakura",
        partition="gpu",
        state="RUNNING",
        submit_time=timezone.now(),
        start_time=timezone.now(),
        gpus=8 * len(hostnames),
        node_count=len(hostnames),
        nodelist=",".join(hostnames),
        tenant=tenant,
        source=Job.Source.SQUEUE,
    )
    job.nodes.set(Node.objects.filter(hostname__in=hostnames))
    return job


def test_job_hardware_reaches_the_leaf_ports_of_every_rail(db):
    job = running_job("7001", ["gpu001", "gpu002"])
    hardware = job_hardware(job)
    assert [row.node.hostname for row in hardware.nodes] == ["gpu001", "gpu002"]
    assert hardware.gpu_count == 16
    first = hardware.nodes[0]
    assert [gpu.index for gpu in first.gpus] == list(range(8))
    assert [link.rail for link in first.rails] == list(range(8))
    # Each rail NIC lands where the inventory's own cable trace says.
    for link in first.rails:
        trace = trace_from_nic(link.nic)
        assert (link.switch.hostname, link.port.name) == (
            trace.switch.hostname, trace.port.name
        )
        assert link.switch.role == Switch.Role.LEAF and link.switch.rail == link.rail
    # One pod: the job crosses that pod's eight rail leafs, two ports on each.
    assert len(hardware.switches) == 8
    assert {switch.pod.name for switch in hardware.switches} == {first.node.pod.name}
    assert all(len(ports) == 2 for ports in hardware.ports_by_switch.values())


def test_job_hardware_costs_the_same_for_two_or_thirty_two_nodes(db):
    small = running_job("7002", ["gpu001", "gpu002"])
    large = running_job("7003", [f"gpu{n:03d}" for n in range(20, 52)])
    with CaptureQueriesContext(connection) as few:
        job_hardware(small)
    with CaptureQueriesContext(connection) as many:
        hardware = job_hardware(large)
    assert len(many) == len(few)
    assert len(hardware.switches) == 16  # gpu020-gpu051 spans both pods


def test_running_jobs_behind_a_leaf_a_port_and_a_spine(db):
    one_pod = running_job("7004", ["gpu003", "gpu004"])
    two_pods = running_job("7005", ["gpu005", "gpu060"])
    finished = running_job("7006", ["gpu003"])
    Job.objects.filter(pk=finished.pk).update(state="COMPLETED")

    nic = NIC.objects.get(node__hostname="gpu003", rail=2)
    trace = trace_from_nic(nic)
    leaf = Switch.objects.get(pk=trace.switch.id)
    assert set(jobs_behind_switch(leaf)) == {one_pod, two_pods}
    other_pod_leaf = Switch.objects.get(rail=2, role=Switch.Role.LEAF, pod__name="p2")
    assert list(jobs_behind_switch(other_pod_leaf)) == [two_pods]

    port = SwitchPort.objects.get(pk=trace.port.id)
    assert list(jobs_behind_port(port)) == [one_pod]

    spine = Switch.objects.filter(role=Switch.Role.SPINE).first()
    assert list(jobs_behind_switch(spine)) == [two_pods]
    uplink = trace.uplinks[0].local_port
    assert list(jobs_behind_port(SwitchPort.objects.get(pk=uplink.id))) == [two_pods]


def test_api_filters_jobs_by_switch_and_port(db, api_as):
    job = running_job("7007", ["gpu010"])
    nic = NIC.objects.get(node__hostname="gpu010", rail=0)
    trace = trace_from_nic(nic)
    client = api_as(Role.OPERATOR)
    rows = client.get(f"/api/jobs/jobs/?switch={trace.switch.id}").json()["results"]
    assert [row["job_id"] for row in rows] == [job.job_id]
    rows = client.get(f"/api/jobs/jobs/?port={trace.port.id}").json()["results"]
    assert [row["job_id"] for row in rows] == [job.job_id]
    assert client.get("/api/jobs/jobs/?switch=0").status_code == 400
    detail = client.get(f"/api/jobs/jobs/{job.job_id}/").json()["hardware"]
    assert len(detail["switches"]) == 8
    assert detail["nodes"][0]["rails"][0]["switch"] == trace.switch.hostname


def test_job_detail_page_lists_the_switches_crossed(db, make_user):
    from django.test import Client

    job = running_job("7008", ["gpu001", "gpu051"])
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/jobs/{job.job_id}/").content.decode()
    assert page.count("leaf-p1-r") >= 8 and page.count("leaf-p2-r") >= 8
    assert "mlx5_11" in page


def test_a_long_job_page_shows_port_ranges_and_its_panels_before_the_node_table(db, make_user):
    """Issue 26: the job page was 5,400 px with the utilisation chart at the bottom and each
    leaf's ports printed one by one; Slurm's "None" reason was shown as "(None)"."""
    from django.test import Client

    job = running_job("7009", [f"gpu{number:03d}" for number in range(11, 26)])
    Job.objects.filter(pk=job.pk).update(state_reason="None")
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get(f"/jobs/{job.job_id}/").content.decode()
    assert page.index('id="telemetry-job"') < page.index('id="job-hardware"')
    assert "Ethernet40-96 (every 4th)" in page
    assert "Ethernet40, Ethernet44" not in page
    assert "(None)" not in page


def test_a_tenant_admin_sees_links_only_to_the_nodes_of_their_job_they_may_open(
    db, make_user, tenant_a
):
    """Issue 26: a tenant's job on shared nodes outside its allocation linked them, a 404."""
    from django.test import Client

    from inventory.allocations import allocation_create

    allocation_create(tenant=tenant_a, hostlist="gpu001", start=timezone.now())
    job = running_job("7010", ["gpu001", "gpu002"], tenant=tenant_a)
    client = Client()
    client.force_login(make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    page = client.get(f"/jobs/{job.job_id}/").content.decode()
    assert 'href="/inventory/nodes/gpu001/"' in page
    assert "gpu002" in page and 'href="/inventory/nodes/gpu002/' not in page
    assert client.get("/inventory/nodes/gpu002/").status_code == 404  # why it is not a link
