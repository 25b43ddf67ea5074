"""The impact service and GET /api/impact/ on a trimmed SAKURAONE fleet:
4 nodes per pod, all 26 switches and every cable rule."""

from __future__ import annotations

import pytest
from django.utils import timezone

from console.impact import impact_of
from inventory.models import Allocation, Cable, Node, Switch
from jobs.models import Job
from portal.models import Role

pytest_plugins = ["tests.fabric.fleet"]

pytestmark = pytest.mark.django_db

URL = "/api/impact/"


def running_job(job_id: str, hostnames: list[str], *, user="alice", tenant=None, gpus=None):
    job = Job.objects.create(
        job_id=job_id, user=user, account=tenant.slurm_account if tenant else "other",
        tenant=tenant, state="RUNNING", source=Job.Source.SQUEUE, node_count=len(hostnames),
        gpus=gpus if gpus is not None else 8 * len(hostnames), nodelist=",".join(hostnames),
        start_time=timezone.now(),
    )
    job.nodes.set(Node.objects.filter(hostname__in=hostnames))
    return job


@pytest.fixture
def jobs(small_fleet, tenant_a, tenant_b):
    """1098 on gpu001-002 (tenant A), 1099 across both pods (tenant B), 1100 finished on
    gpu001, and tenant B's allocation of gpu003."""
    hit = running_job("1098", ["gpu001", "gpu002"], user="alice", tenant=tenant_a)
    spanning = running_job("1099", ["gpu004", "gpu051"], user="bob", tenant=tenant_b)
    finished = running_job("1100", ["gpu001"], tenant=tenant_a)
    Job.objects.filter(pk=finished.pk).update(state="COMPLETED")
    allocation = Allocation.objects.create(tenant=tenant_b, start=timezone.now(),
                                           purpose="training")
    allocation.nodes.set(Node.objects.filter(hostname__in=["gpu003", "gpu004"]))
    return {"hit": hit, "spanning": spanning}


def test_a_leaf_hits_the_jobs_users_and_tenants_behind_it(jobs, make_user):
    impact = impact_of(user=make_user(Role.ONCALL), target="switch:leaf-p1-r3")
    assert [job["job_id"] for job in impact.jobs] == ["1098", "1099"]
    first = impact.jobs[0]
    assert (first["user"], first["tenant"], first["gpus"], first["nodes_hit"]) == (
        "alice", "tenant-a", 16, "gpu[001-002]")
    assert [tenant["slug"] for tenant in impact.tenants] == ["tenant-a", "tenant-b"]
    tenant_b = impact.tenants[1]
    assert tenant_b["allocations"][0]["nodes_hit"] == "gpu[003-004]"
    assert {node["hostname"] for node in impact.nodes} == {"gpu001", "gpu002", "gpu003", "gpu004"}
    assert all(node["effect"] == "degraded" and node["rails"] == [3] for node in impact.nodes)
    assert impact.summary["rails"] == [3]
    assert "2 running jobs of 2 users" in impact.summary["text"]


def test_a_port_hits_only_the_node_behind_it_on_one_rail(jobs, make_user):
    leaf = Switch.objects.get(hostname="leaf-p1-r3")
    cable = Cable.objects.filter(a_port__switch=leaf, b_nic__node__hostname="gpu002").first() or \
        Cable.objects.get(b_port__switch=leaf, a_nic__node__hostname="gpu002")
    port = cable.a_port if cable.a_port_id else cable.b_port
    impact = impact_of(user=make_user(Role.OPERATOR), target=f"port:leaf-p1-r3:{port.name}")
    assert [node["hostname"] for node in impact.nodes] == ["gpu002"]
    assert impact.nodes[0]["rails"] == [3]
    assert [job["job_id"] for job in impact.jobs] == ["1098"]
    by_cable = impact_of(user=make_user(Role.OPERATOR), target=f"cable:{cable.pk}")
    assert by_cable.nodes == impact.nodes


def test_a_spine_costs_each_pod_its_share_of_bisection_and_hits_jobs_spanning_pods(
    jobs, make_user
):
    impact = impact_of(user=make_user(Role.ADMIN), target="switch:spine-1")
    assert [job["job_id"] for job in impact.jobs] == ["1099"]
    assert impact.jobs[0]["how"] == "traffic between pods"
    assert impact.nodes == []
    fractions = {row["pod"]: row["lost_fraction"] for row in impact.summary["bisection"]}
    assert fractions == {"p1": 0.125, "p2": 0.125}  # one spine of eight


def test_node_gpu_nic_and_hostlist_targets(jobs, make_user):
    oncall = make_user(Role.ONCALL)
    node = impact_of(user=oncall, target="node:gpu001")
    assert node.nodes[0]["effect"] == "out"
    assert [job["job_id"] for job in node.jobs] == ["1098"]  # not the finished 1100
    gpu = impact_of(user=oncall, target="gpu:gpu002:3")
    assert gpu.nodes[0]["gpus"] == [3] and [j["job_id"] for j in gpu.jobs] == ["1098"]
    nic = Node.objects.get(hostname="gpu004").nics.get(role="rail", rail=5)
    by_nic = impact_of(user=oncall, target=f"nic:gpu004:{nic.device}")
    assert by_nic.nodes[0]["rails"] == [5]
    storage = impact_of(user=oncall, target="switch:storage-1")
    assert storage.summary["other_links"] == ["storage"] and storage.summary["rails"] == []
    assert "8 nodes lose a storage link" in storage.summary["text"]
    hostlist = impact_of(user=oncall, target="hostlist:gpu[003-004]")
    assert hostlist.summary["nodes_out"] == "gpu[003-004]"
    assert [job["job_id"] for job in hostlist.jobs] == ["1099"]


def test_tenant_admin_sees_only_own_jobs_and_viewer_no_tenant_data(jobs, api_as, tenant_a):
    tenant_admin = api_as(Role.TENANT_ADMIN, tenant=tenant_a)
    allocation = Allocation.objects.create(tenant=tenant_a, start=timezone.now())
    allocation.nodes.set(Node.objects.filter(hostname__in=["gpu001", "gpu002"]))
    body = tenant_admin.get(URL, {"target": "hostlist:gpu[001-002]"}).json()
    assert [job["job_id"] for job in body["jobs"]] == ["1098"]
    assert [tenant["slug"] for tenant in body["tenants"]] == ["tenant-a"]
    # Another tenant's node, and switches, are not theirs to name.
    for target in ("node:gpu004", "switch:leaf-p1-r3"):
        response = tenant_admin.get(URL, {"target": target})
        assert response.status_code == 400 and "target" in response.json()
    viewer = api_as(Role.VIEWER).get(URL, {"target": "switch:leaf-p1-r3"}).json()
    assert viewer["jobs"] == [] and viewer["tenants"] == []
    assert viewer["summary"]["jobs_visible"] is False and len(viewer["nodes"]) == 4


@pytest.mark.parametrize("target", ["", "leaf-p1-r3", "rack:r1", "switch:nope", "node:gpu999",
                                    "hostlist:gpu[001-", "gpu:gpu001:x", "port:leaf-p1-r3:Eth",
                                    "cable:999999", "nic:gpu001:mlx5_99"])
def test_a_bad_target_is_a_400_naming_the_field(small_fleet, operator_api, target):
    response = operator_api.get(URL, {"target": target})
    assert response.status_code == 400
    assert "target" in response.json()


def test_the_query_count_does_not_grow_with_the_switch(jobs, make_user,
                                                       django_assert_max_num_queries):
    oncall = make_user(Role.ONCALL)
    # At most 19: the pods' uplink capacity not yet cached for this inventory revision (3 of
    # them), and the lost bisection read under its planner setting, which inside the test's
    # transaction is a savepoint, SET LOCAL, its reset and the release (portal.planner).
    with django_assert_max_num_queries(19):
        impact_of(user=oncall, target="switch:leaf-p1-r3")
    with django_assert_max_num_queries(19):
        impact_of(user=oncall, target="switch:spine-1")


def test_the_jobs_list_and_page_filter_by_node_or_hostlist(jobs, operator_api, client,
                                                            make_user):
    body = operator_api.get("/api/jobs/jobs/", {"node": "gpu001"}).json()
    assert sorted(job["job_id"] for job in body["results"]) == ["1098", "1100"]
    body = operator_api.get("/api/jobs/jobs/", {"node": "gpu[002-051]"}).json()
    assert sorted(job["job_id"] for job in body["results"]) == ["1098", "1099"]
    response = operator_api.get("/api/jobs/jobs/", {"node": "gpu[001-"})
    assert response.status_code == 400 and "node" in response.json()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get("/jobs/", {"node": "gpu051"}).content.decode()
    assert 'href="/jobs/1099/"' in page and 'href="/jobs/1098/"' not in page


def test_the_pages_show_who_a_node_a_switch_or_a_port_shutdown_hits(jobs, make_user, client):
    client.force_login(make_user(Role.OPERATOR))
    leaf = Switch.objects.get(hostname="leaf-p1-r3")
    port = leaf.ports.filter(cables_as_a__b_nic__node__hostname="gpu002").first() or \
        leaf.ports.get(cables_as_b__a_nic__node__hostname="gpu002")
    pages = {
        "node": "/inventory/nodes/gpu001/",
        "inventory switch": "/inventory/switches/leaf-p1-r3/",
        "fabric switch": "/fabric/switches/leaf-p1-r3/",
        "port shutdown": f"/fabric/switches/{leaf.pk}/ports/admin/?ports={port.name}",
        "leaf maintenance": f"/fabric/switches/{leaf.pk}/maintenance/",
        "bulk drain": "/jobs/nodes/bulk-drain/?hostlist=gpu[001-002]",
    }
    for page, url in pages.items():
        body = client.get(url).content.decode()
        assert "impact-card" in body, page
        assert 'href="/jobs/1098/"' in body, page
        assert "alice" in body, page


def test_the_impact_card_offers_the_drain_of_the_nodes_still_in_service_to_who_may_drain(
    jobs, make_user, client
):
    """The leaf-maintenance story: from "who this hits" to draining them, on every
    card but the drain page's own; a viewer sees the card without the link."""
    Node.objects.filter(hostname="gpu003").update(slurm_state="drained")
    client.force_login(make_user(Role.OPERATOR))
    body = client.get("/fabric/switches/leaf-p1-r3/").content.decode()
    assert 'href="/jobs/nodes/bulk-drain/?hostlist=gpu%5B001-002%2C004%5D"' in body
    drain_page = client.get("/jobs/nodes/bulk-drain/?hostlist=gpu[001-002]").content.decode()
    assert "impact-card" in drain_page and "Drain these nodes" not in drain_page
    client.force_login(make_user(Role.VIEWER))
    body = client.get("/fabric/switches/leaf-p1-r3/").content.decode()
    assert "impact-card" in body and "Drain these nodes" not in body
