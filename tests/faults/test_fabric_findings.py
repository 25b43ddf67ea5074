"""Fabric findings become fault tickets: LLDP swaps and missing links, and a running job's
rail imbalance on a degraded leaf (paper Observation 7)."""

import pytest

from fabric.lldp import collect_and_reconcile
from fabric.rail_health import check_running_jobs
from faults.models import Category, FaultTicket, IntakeRecord, Source
from inventory.models import Node
from jobs.models import Job
from tests.fabric.monitoring_support import poll_every_minute

pytest_plugins = ["tests.fabric.fleet"]  # fixtures: a small fleet and the emulated fabric
pytestmark = pytest.mark.django_db

POD1_LEAFS = [f"leaf-p1-r{rail}" for rail in range(8)]


def test_crossed_rails_open_one_misconfiguration_ticket_on_the_port(small_fleet, emulated):
    emulated.cross_cables(("leaf-p1-r2", "Ethernet4"), ("leaf-p1-r3", "Ethernet4"))
    collect_and_reconcile()
    collect_and_reconcile()  # seen again: no second ticket
    (ticket,) = FaultTicket.objects.all()
    assert ticket.category == Category.MISCONFIGURATION and ticket.subtype == "network"
    assert "gpu002" in ticket.summary
    record = IntakeRecord.objects.get(channel=Source.SWITCH)
    assert record.accepted and ticket in record.tickets.all()


def test_a_cut_cable_opens_a_transceiver_ticket_on_its_port(small_fleet, emulated):
    emulated.switches["leaf-p2-r5"].set_link_up("Ethernet8", False)
    collect_and_reconcile()
    ticket = FaultTicket.objects.get(category=Category.NIC_TRANSCEIVER)
    assert ticket.subtype == "transceiver" and "gpu053" in ticket.summary
    assert ticket.sources == [Source.SWITCH]


def test_a_running_jobs_degraded_leaf_opens_an_interconnect_ticket(small_fleet, emulated):
    nodes = list(Node.objects.filter(hostname__in=["gpu001", "gpu002", "gpu003", "gpu004"]))
    job = Job.objects.create(job_id="4242", state="RUNNING", node_count=4, gpus=32, source="squeue")
    job.nodes.set(nodes)
    for leaf in POD1_LEAFS:  # paper Job B: six rails near 18.9 GB/s, two near 8 GB/s
        emulated.scale_switch_traffic(leaf, 0.16 if leaf in ("leaf-p1-r2", "leaf-p1-r6") else 0.38)
    poll_every_minute(emulated, 4, POD1_LEAFS)
    assert check_running_jobs() == ["job 4242"]
    ticket = FaultTicket.objects.get(category=Category.INTERCONNECT_SWITCH)
    assert ticket.subtype == "leaf" and "job 4242" in ticket.summary
    assert "leaf-p1-r2" in ticket.summary


def test_the_job_page_shows_its_rail_throughput(small_fleet, emulated, make_user, tenant_a):
    from django.test import Client

    from portal.models import Role

    nodes = list(Node.objects.filter(hostname__in=["gpu001", "gpu002"]))
    job = Job.objects.create(job_id="77", state="RUNNING", node_count=2, gpus=16, source="squeue")
    job.nodes.set(nodes)
    for leaf in POD1_LEAFS:
        emulated.scale_switch_traffic(leaf, 0.38)
    poll_every_minute(emulated, 2, POD1_LEAFS)
    client = Client()
    client.force_login(make_user(Role.OPERATOR))
    page = client.get("/jobs/77/").content.decode()
    assert "Rail throughput" in page and "leaf-p1-r7" in page and "GB/s" in page
    tenant_admin = Client()
    tenant_admin.force_login(make_user(Role.TENANT_ADMIN, tenant=tenant_a))
    Job.objects.filter(pk=job.pk).update(tenant=tenant_a)
    assert "Rail throughput" not in tenant_admin.get("/jobs/77/").content.decode()
