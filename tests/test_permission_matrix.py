"""Every route x every role x own/other tenant, as declared in tests/permission_matrix.py.

A route added to the URL conf without an entry in the matrix fails `test_every_route_is_in_the
_matrix`, so nobody ships an endpoint without deciding who may use it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from fabric.models import MaintenanceWindow
from faults.models import IntakeRecord
from faults.services.intake import submit_user_report
from faults.services.repairs import PartRequest, open_repair_case
from inventory.allocations import allocation_create
from inventory.models import GPU, NIC, LifecycleStatus, Node, Pod, Rack, Switch, SwitchPort
from inventory.services import cable_create
from inventory.spares import spare_stock_set
from inventory.swaps import component_replace, slot_for
from jobs.models import Job
from portal.actions.canary import CANARY_KIND
from portal.models import AuditEntry, Role
from portal.services.accounts import api_token_create
from portal.services.actions import enqueue_action
from tests.permission_matrix import MATRIX, ROLES

pytestmark = pytest.mark.django_db
SKIPPED_NAMESPACES = {"admin"}  # Django's own admin site: staff-only, Django's permissions


def named_routes() -> set[str]:
    names: set[str] = set()

    def walk(patterns, namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace in SKIPPED_NAMESPACES:
                    continue
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern):
                names.add(f"{namespace}{pattern.name}" if pattern.name else f"<unnamed {pattern}>")

    walk(get_resolver().url_patterns, "")
    return names


def test_every_route_is_in_the_matrix():
    routes = named_routes()
    missing = sorted(routes - set(MATRIX))
    stale = sorted(set(MATRIX) - routes)
    assert not missing, f"routes with no permission-matrix entry: {missing}"
    assert not stale, f"matrix entries for routes that no longer exist: {stale}"
    for name, route in MATRIX.items():
        assert route.probes or route.exempt, f"{name}: probe it or say why it is exempt"


@pytest.fixture
def world(make_user, tenant_a, tenant_b):
    """The objects the probes point at, and one user per role (the tenant admin in tenant A)."""
    users = {role: make_user(role) for role in Role}
    outsider = make_user(Role.VIEWER, username="outsider")
    token, _ = api_token_create(user=outsider, name="not yours")
    action, _ = enqueue_action(kind=CANARY_KIND, target="matrix", reason="probe")
    pod = Pod.objects.create(name="matrix-pod")
    node = Node.objects.create(hostname="matrix001", pod=pod, status=LifecycleStatus.ACTIVE)
    allocation = allocation_create(tenant=tenant_a, nodes=[node], start=timezone.now())
    switch = Switch.objects.create(hostname="matrix-leaf", role="leaf", pod=pod, rail=0)
    port = SwitchPort.objects.create(switch=switch, name="Ethernet0", speed_gbps=400)
    rack = Rack.objects.create(name="matrix-rack", pod=pod)
    Node.objects.filter(pk=node.pk).update(rack=rack)
    other_node = Node.objects.create(hostname="matrix002", pod=pod, status=LifecycleStatus.ACTIVE)
    own_gpu = GPU.objects.create(node=node, index=0)
    other_gpu = GPU.objects.create(node=other_node, index=0)
    own_nic = NIC.objects.create(node=node, device="mlx5_0", role="rail", rail=0)
    other_nic = NIC.objects.create(node=other_node, device="mlx5_0", role="rail", rail=0)
    own_cable = cable_create(a=own_nic, b=port, type="800GBASE-2DR4")
    window = MaintenanceWindow.objects.create(
        reason="probe", planned_start=timezone.now(),
        planned_end=timezone.now() + timedelta(hours=1), status=MaintenanceWindow.Status.ENDED)
    own_job = Job.objects.create(
        job_id="9001",
        account=tenant_a.slurm_account,
        tenant=tenant_a,
        state="RUNNING",
        source="squeue",
    )
    other_job = Job.objects.create(
        job_id="9002",
        account=tenant_b.slurm_account,
        tenant=tenant_b,
        state="RUNNING",
        source="squeue",
    )
    ticket, _ = submit_user_report(reported_by=users[Role.ONCALL], summary="probe", node=node)
    repair_case = open_repair_case(
        ticket=ticket, vendor="probe", component="gpu", actor=None,
        parts=[PartRequest(kind="gpu", gpu_index=0)],
    )
    own_swap = component_replace(slot=slot_for(kind="node", node=node), serial_in="PROBE-1")
    spare_stock = spare_stock_set(kind="gpu", site="probe", on_hand=1)
    other_swap = component_replace(slot=slot_for(kind="node", node=other_node),
                                   serial_in="PROBE-2")
    return SimpleNamespace(
        users=users,
        own_tenant=tenant_a,
        other_tenant=tenant_b,
        action=action,
        allocation=allocation,
        node=node,
        pod=pod,
        switch=switch,
        port=port,
        ticket=ticket,
        repair_case=repair_case,
        own_swap=own_swap,
        spare_stock=spare_stock,
        other_swap=other_swap,
        own_job=own_job,
        rack=rack,
        other_node=other_node,
        own_gpu=own_gpu,
        other_gpu=other_gpu,
        own_nic=own_nic,
        other_nic=other_nic,
        own_cable=own_cable,
        window=window,
        other_job=other_job,
        intake=IntakeRecord.objects.order_by("-pk").first(),
        audit_entry=AuditEntry.objects.order_by("-pk").first(),
        foreign_token=token,
    )


def client_for(role: str, world, *, api: bool):
    client = APIClient() if api else Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


@pytest.mark.parametrize("name", sorted(name for name, route in MATRIX.items() if route.probes))
def test_route_answers_each_role_as_declared(name, world):
    mismatches = []
    for probe in MATRIX[name].probes:
        path = probe.path(world)
        is_api = path.startswith("/api/")
        for role in ROLES:
            # Each role's request runs in a savepoint that is rolled back, so one role's write
            # (a cancel, a token) never changes what the next role sees.
            with transaction.atomic():
                client = client_for(role, world, api=is_api)
                if probe.method == "GET":
                    response = client.get(path)
                elif is_api:
                    response = client.generic(
                        probe.method,
                        path,
                        data=json.dumps(probe.body),
                        content_type="application/json",
                    )
                else:
                    response = client.generic(probe.method, path, data=probe.body or "")
                transaction.set_rollback(True)
            if response.status_code != probe.expect[role]:
                mismatches.append(
                    f"{probe.method} {path} as {role}: {response.status_code}, "
                    f"expected {probe.expect[role]}"
                )
    assert not mismatches, "\n".join(mismatches)
