"""Small helpers shared by the inventory API tests."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from inventory.hostlist import expand_hostlist
from inventory.models import NIC, Allocation, Node, SwitchPort

API = "/api/inventory"


def nic(hostname: str, device: str) -> NIC:
    return NIC.objects.select_related("node").get(node__hostname=hostname, device=device)


def port(switch: str, name: str) -> SwitchPort:
    return SwitchPort.objects.select_related("switch").get(switch__hostname=switch, name=name)


def node(hostname: str) -> Node:
    return Node.objects.get(hostname=hostname)


def allocate(tenant, hostlist: str, *, start=None, end=None) -> Allocation:
    now = timezone.now()
    allocation = Allocation.objects.create(
        tenant=tenant, start=start or now - timedelta(days=1), end=end, purpose="tests"
    )
    allocation.nodes.set(Node.objects.filter(hostname__in=expand_hostlist(hostlist)))
    return allocation


def results(response) -> list[dict]:
    body = response.json()
    return body["results"] if isinstance(body, dict) and "results" in body else body
