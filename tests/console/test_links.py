"""Every reference to an object is a link to it: the job page's nodes, switches,
ports and tenant; a ticket's node; an Action's target; cable numbers. A role that may not open
the page sees the name without a link, never a link to a 403."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from faults.services.intake import submit_user_report
from inventory.allocations import allocation_create
from inventory.models import NIC, LifecycleStatus, Node, Pod, Switch, SwitchPort
from inventory.services import cable_create
from portal.models import Role
from portal.services.actions import enqueue_action
from tests.jobs.test_api import make_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(make_user, tenant_a):
    pod = Pod.objects.create(name="p1")
    node = Node.objects.create(hostname="gpu011", pod=pod, status=LifecycleStatus.ACTIVE)
    allocation_create(tenant=tenant_a, nodes=[node], start=timezone.now())
    leaf = Switch.objects.create(hostname="leaf-p1-r0", role="leaf", pod=pod, rail=0)
    port = SwitchPort.objects.create(switch=leaf, name="Ethernet8", index=8, speed_gbps=400)
    nic = NIC.objects.create(node=node, device="mlx5_0", role="rail", rail=0)
    cable = cable_create(a=nic, b=port, type="800GBASE-2DR4")
    job = make_jobs(1, tenant=tenant_a, nodes=[node], start=1098)[0]
    ticket, _ = submit_user_report(reported_by=make_user(Role.ONCALL), summary="ECC", node=node)
    action, _ = enqueue_action(kind="portal.canary", target="gpu011", reason="links")

    def client(role):
        browser = Client()
        browser.force_login(make_user(role))
        return browser

    return SimpleNamespace(node=node, leaf=leaf, cable=cable, job=job, ticket=ticket,
                           action=action, client=client, tenant=tenant_a)


def test_the_job_page_links_its_nodes_switches_ports_and_tenant(world):
    html = world.client(Role.OPERATOR).get("/jobs/1098/").content.decode()
    assert '<a href="/inventory/nodes/gpu011/">gpu011</a>' in html
    assert '<a href="/fabric/switches/leaf-p1-r0/">leaf-p1-r0</a>' in html
    assert '<a href="/fabric/switches/leaf-p1-r0/#port-Ethernet8">Ethernet8</a>' in html
    assert '<a href="/tenants/tenant-a/">Tenant A</a>' in html


def test_a_tenant_admin_gets_links_only_to_pages_they_may_open(world):
    html = world.client(Role.TENANT_ADMIN).get("/jobs/1098/").content.decode()
    assert '<a href="/inventory/nodes/gpu011/">gpu011</a>' in html
    assert '<a href="/tenants/tenant-a/">Tenant A</a>' in html
    assert "leaf-p1-r0" in html and 'href="/fabric/switches/' not in html


def test_a_ticket_links_its_node(world):
    html = world.client(Role.ONCALL).get(f"/faults/{world.ticket.pk}/").content.decode()
    assert '<a href="/inventory/nodes/gpu011/">gpu011</a>' in html


def test_an_actions_target_leads_to_the_object(world):
    browser = world.client(Role.OPERATOR)
    for page in ("/actions/", f"/actions/{world.action.pk}/", "/"):
        assert '<a href="/search/?q=gpu011">gpu011</a>' in browser.get(page).content.decode(), page
    assert browser.get("/search/?q=gpu011")["Location"] == "/inventory/nodes/gpu011/"


def test_a_cable_number_opens_that_cable(world):
    browser = world.client(Role.OPERATOR)
    pk = world.cable.pk
    node_page = browser.get("/inventory/nodes/gpu011/").content.decode()
    assert f'href="/inventory/cables/?cable={pk}#cable-{pk}">#{pk}</a>' in node_page
    other_nic = NIC.objects.create(node=world.node, device="mlx5_1", role="rail", rail=1)
    other_port = SwitchPort.objects.create(switch=world.leaf, name="Ethernet16", index=16)
    cable_create(a=other_nic, b=other_port, type="800GBASE-2DR4")
    listing = browser.get("/inventory/cables/", {"cable": pk}).content.decode()
    assert re.findall(r'id="cable-(\d+)"', listing) == [str(pk)]


def test_a_jobs_node_list_opens_those_nodes(world):
    browser = world.client(Role.OPERATOR)
    for page in ("/jobs/", "/jobs/1098/"):
        html = browser.get(page, {"live": ""}).content.decode()
        assert 'href="/inventory/?hostlist=gpu011"' in html, page
    nodes = browser.get("/inventory/", {"hostlist": "gpu011"}).content.decode()
    assert 'href="/inventory/nodes/gpu011/"' in nodes


def test_the_ticket_list_links_each_tickets_component(world):
    html = world.client(Role.VIEWER).get("/faults/tickets/").content.decode()
    assert '<a href="/inventory/nodes/gpu011/">' in html
