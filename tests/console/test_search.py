"""The jump box's search: every kind of identifier an operator pastes lands on
the object's page, scoped by role like every other read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from console.search import search
from faults.services.intake import submit_user_report
from inventory.allocations import allocation_create
from inventory.models import GPU, NIC, LifecycleStatus, Node, Pod, Switch, SwitchPort
from jobs.models import Job
from portal.models import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(make_user, tenant_a, tenant_b):
    pod = Pod.objects.create(name="p1")
    own = Node.objects.create(hostname="gpu011", serial="S011", pod=pod,
                              status=LifecycleStatus.ACTIVE)
    other = Node.objects.create(hostname="gpu012", serial="S012", pod=pod,
                                status=LifecycleStatus.ACTIVE)
    allocation_create(tenant=tenant_a, nodes=[own], start=timezone.now())
    gpu = GPU.objects.create(node=own, index=3, uuid="GPU-1234abcd-0000", serial="1650923001234")
    nic = NIC.objects.create(node=own, device="mlx5_4", role="rail", rail=3,
                             mac="b8:3f:d2:00:11:22")
    leaf = Switch.objects.create(hostname="leaf-p1-r3", role="leaf", pod=pod, rail=3,
                                 serial="EC2301000123", management_address="10.0.0.13")
    SwitchPort.objects.create(switch=leaf, name="Ethernet8", index=8, speed_gbps=400)
    own_job = Job.objects.create(job_id="1098", user="alice", tenant=tenant_a, state="RUNNING",
                                 source="squeue")
    other_job = Job.objects.create(job_id="1099", user="bob", tenant=tenant_b, state="RUNNING",
                                   source="squeue")
    ticket, _ = submit_user_report(reported_by=make_user(Role.ONCALL), summary="ECC", node=own)
    users = {role: make_user(role) for role in Role}
    return SimpleNamespace(own=own, other=other, gpu=gpu, nic=nic, leaf=leaf, users=users,
                           own_job=own_job, other_job=other_job, ticket=ticket)


@pytest.mark.parametrize(
    ("query", "kind", "url"),
    [
        ("gpu011", "node", "/inventory/nodes/gpu011/"),
        ("S011", "node", "/inventory/nodes/gpu011/"),
        ("gpu[011-012]", "hostlist", "/inventory/?hostlist=gpu%5B011-012%5D"),
        ("1098", "job", "/jobs/1098/"),
        ("GPU-1234abcd-0000", "gpu", "/inventory/nodes/gpu011/#gpu-3"),
        ("1650923001234", "gpu", "/inventory/nodes/gpu011/#gpu-3"),
        ("B8-3F-D2-00-11-22", "nic", "/inventory/nodes/gpu011/nics/mlx5_4/trace/"),
        ("leaf-p1-r3", "switch", "/fabric/switches/leaf-p1-r3/"),
        ("EC2301000123", "switch", "/fabric/switches/leaf-p1-r3/"),
        ("10.0.0.13", "switch", "/fabric/switches/leaf-p1-r3/"),
        ("leaf-p1-r3:Ethernet8", "port", "/fabric/switches/leaf-p1-r3/#port-Ethernet8"),
    ],
)
def test_each_kind_of_identifier_jumps_to_its_page(cluster, query, kind, url):
    result = search(user=cluster.users[Role.OPERATOR], query=query)
    assert result.jump is not None, result.hits
    assert (result.jump.kind, result.jump.url) == (kind, url)


def test_a_ticket_number_jumps_to_the_ticket(cluster):
    for query in (f"FT-{cluster.ticket.pk}", f"ft{cluster.ticket.pk}"):
        jump = search(user=cluster.users[Role.ONCALL], query=query).jump
        assert jump.kind == "ticket" and jump.url == f"/faults/{cluster.ticket.pk}/"


def test_a_fragment_lists_every_match_without_jumping(cluster):
    result = search(user=cluster.users[Role.OPERATOR], query="gpu01")
    assert result.jump is None
    assert {hit.label for hit in result.hits if hit.kind == "node"} == {"gpu011", "gpu012"}


def test_a_tenant_admin_finds_only_their_own_tenants_objects(cluster):
    tenant_admin = cluster.users[Role.TENANT_ADMIN]
    assert search(user=tenant_admin, query="1098").jump.kind == "job"
    assert search(user=tenant_admin, query="1099").hits == []
    assert [hit.label for hit in search(user=tenant_admin, query="gpu01").hits] == ["gpu011"]
    assert search(user=tenant_admin, query="leaf-p1-r3").hits == []
    assert search(user=tenant_admin, query=f"FT-{cluster.ticket.pk}").hits == []
    # A viewer reads hardware and tickets but no tenant's jobs.
    assert search(user=cluster.users[Role.VIEWER], query="1098").hits == []


def test_the_api_answers_with_the_jump_and_names_the_field_on_bad_input(cluster, api_as):
    client = api_as(Role.VIEWER)
    body = client.get("/api/search/", {"q": "leaf-p1-r3:Ethernet8"}).json()
    assert body["jump"]["url"] == "/fabric/switches/leaf-p1-r3/#port-Ethernet8"
    assert body["results"][0]["kind"] == "port"
    for bad in ("", "x", "gpu[011-", "y" * 201):
        response = client.get("/api/search/", {"q": bad})
        assert response.status_code == 400, bad
        # The 400 names the parameter (and says which one in `detail`): nothing else.
        assert set(response.json()) <= {"q", "detail"} and "q" in response.json(), (
            response.json())


def test_the_page_redirects_to_a_single_match_and_keeps_the_query_otherwise(cluster):
    browser = Client()
    browser.force_login(cluster.users[Role.OPERATOR])
    assert browser.get("/search/", {"q": "gpu011"})["Location"] == "/inventory/nodes/gpu011/"
    listing = browser.get("/search/", {"q": "gpu01"})
    assert listing.status_code == 200
    html = listing.content.decode()
    assert 'href="/inventory/nodes/gpu012/"' in html and 'value="gpu01"' in html
    refused = browser.get("/search/", {"q": "gpu[011-"})
    assert refused.status_code == 400 and 'value="gpu[011-"' in refused.content.decode()


def test_the_search_costs_the_same_queries_however_many_objects_match(cluster):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    user = cluster.users[Role.OPERATOR]
    search(user=user, query="gpu01")  # the role is looked up once and cached on the user
    with CaptureQueriesContext(connection) as few:
        search(user=user, query="gpu01")
    for number in range(20, 30):
        node = Node.objects.create(hostname=f"gpu0{number}", serial=f"S0{number}")
        GPU.objects.create(node=node, index=0, uuid=f"GPU-gpu0{number}")
    with CaptureQueriesContext(connection) as many:
        result = search(user=user, query="gpu0")
    assert len(result.hits) > 10
    assert len(many) == len(few) <= 6


@pytest.mark.parametrize("query", ["gpu11", "GPU11", "gpu0011"])
def test_a_hostname_without_its_zero_padding_jumps_to_the_node(cluster, query):
    jump = search(user=cluster.users[Role.OPERATOR], query=query).jump
    assert jump is not None and jump.url == "/inventory/nodes/gpu011/"


def test_a_padding_guess_does_not_jump_past_what_a_fragment_matches(cluster):
    Node.objects.create(hostname="gpu001", serial="S001")
    result = search(user=cluster.users[Role.OPERATOR], query="gpu01")
    assert result.jump is None  # gpu011 half typed, or gpu001: the list says both
    assert {hit.label for hit in result.hits if hit.kind == "node"} == {
        "gpu001", "gpu011", "gpu012"}


def test_the_padding_guess_stays_within_what_the_role_may_see(cluster):
    assert search(user=cluster.users[Role.TENANT_ADMIN], query="gpu12").hits == []


@pytest.mark.parametrize("query", ["leaf-p1-r3 Ethernet8", "leaf-p1-r3   ethernet8",
                                   "leaf-p1-r3 Eth3/1(Port3)", "leaf-p1-r3:Eth3/1(Port3)"])
def test_a_switch_and_port_pasted_with_a_space_or_by_alias_jump_to_the_port(cluster, query):
    SwitchPort.objects.filter(switch=cluster.leaf, name="Ethernet8").update(alias="Eth3/1(Port3)")
    jump = search(user=cluster.users[Role.OPERATOR], query=query).jump
    assert jump is not None and jump.url == "/fabric/switches/leaf-p1-r3/#port-Ethernet8"


def test_a_bare_port_alias_lists_the_port_on_every_switch_without_jumping(cluster):
    SwitchPort.objects.filter(switch=cluster.leaf, name="Ethernet8").update(alias="etp3")
    other = Switch.objects.create(hostname="leaf-p2-r3", role="leaf", rail=3,
                                  pod=Pod.objects.create(name="p2"))
    SwitchPort.objects.create(switch=other, name="Ethernet8", index=8, speed_gbps=400,
                              alias="etp3")
    result = search(user=cluster.users[Role.OPERATOR], query="etp3")
    assert result.jump is None
    assert [hit.label for hit in result.hits] == ["leaf-p1-r3:Ethernet8", "leaf-p2-r3:Ethernet8"]


def test_two_words_that_are_not_a_switch_and_port_are_still_searched(cluster):
    Job.objects.filter(pk=cluster.own_job.pk).update(name="sft llama")
    assert search(user=cluster.users[Role.OPERATOR], query="gpu011 S011").hits == []
    assert search(user=cluster.users[Role.OPERATOR], query="S011").jump.label == "gpu011"
