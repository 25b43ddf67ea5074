"""Run in an embedded-default demo by `manage.py shell -c`, for test_embedded_default.py.

`add_jobs()` gives each demo tenant a job through the demo's own Slurm simulator and runs the
syncs the demo's in-process beat runs in its first minute. `describe()` prints, as JSON, the
objects the permission matrix's probes point at (tests/permission_matrix.py), found in the
demo's database after the test made its allocation, Action, ticket and tokens over HTTP.
"""

from __future__ import annotations

import json

SUBMITTED_JOB_NAME = "embedded-default-probe"


def add_jobs() -> None:
    from jobs.drivers.base import get_slurm_driver
    from jobs.tasks import import_accounting, sync_live_jobs, sync_node_states
    from portal.models import Tenant

    driver = get_slurm_driver()
    node_states = driver.nodes()
    idle = sorted(state.name for state in node_states if state.state == "idle" and not state.flags)
    for tenant, node in zip(Tenant.objects.order_by("slug"), reversed(idle), strict=False):
        driver.submit_job(
            nodes=[node],
            seconds=3 * 3600,
            name=SUBMITTED_JOB_NAME,
            account=tenant.slurm_account,
            user="probe",
        )
    for task in (sync_node_states, sync_live_jobs, import_accounting):
        task.apply()


def run_fabric_tasks() -> None:
    """What the demo's in-process beat does in its first minutes with the SONiC emulator:
    counters (two polls, so rates and history exist), LLDP reconciliation, rail health (run
    with the lab's FABRIC_* settings)."""
    import time

    from fabric.tasks import (
        check_running_jobs_rail_health,
        poll_fabric_counters,
        reconcile_fabric_lldp,
    )

    tasks = (
        poll_fabric_counters,
        poll_fabric_counters,
        reconcile_fabric_lldp,
        check_running_jobs_rail_health,
    )
    for task in tasks:
        if task is poll_fabric_counters:
            time.sleep(1)  # counters advance with time: the second poll has rates
        result = task.apply()
        if result.failed():
            raise RuntimeError(f"{task.name} failed: {result.traceback}")
        print(task.name, result.result)


def add_repairs() -> None:
    """A repair case on the demo's first ticket and a part swapped on a node of each kind the
    probes point at (the tenant admin's node and another), as an operator's work would leave."""
    from faults.models import FaultTicket
    from faults.services.repairs import PartRequest, open_repair_case
    from inventory.models import Allocation, Node
    from inventory.swaps import component_replace, slot_for
    from portal.models import User

    own_tenant = User.objects.get(username="demo-tenant-admin").tenant
    allocation = Allocation.objects.filter(tenant=own_tenant).order_by("pk").first()
    node = allocation.nodes.order_by("hostname").first()
    other_node = Node.objects.exclude(allocations__tenant=own_tenant).order_by("hostname").first()
    open_repair_case(
        ticket=FaultTicket.objects.order_by("pk").first(), vendor="probe", component="gpu",
        actor=None, parts=[PartRequest(kind="gpu", gpu_index=0)],
    )
    component_replace(slot=slot_for(kind="node", node=node), serial_in="EMBEDDED-1")
    component_replace(slot=slot_for(kind="node", node=other_node), serial_in="EMBEDDED-2")
    from inventory.spares import spare_stock_set

    spare_stock_set(kind="gpu", site="embedded", on_hand=1)
    # A maintenance window that has ended, as the permission matrix's world has: its routes
    # are probed, and stepping an ended window is a refusal that changes nothing.
    from datetime import timedelta

    from django.utils import timezone

    from fabric.models import MaintenanceWindow

    MaintenanceWindow.objects.create(
        reason="probe", planned_start=timezone.now(),
        planned_end=timezone.now() + timedelta(hours=1), status=MaintenanceWindow.Status.ENDED)


def _brief(instance, *fields: str) -> dict | None:
    if instance is None:
        return None
    return {"pk": instance.pk, **{name: getattr(instance, name) for name in fields}}


def describe() -> None:
    from django.db.models import Q

    from fabric.models import MaintenanceWindow
    from faults.models import FaultTicket, IntakeRecord, RepairCase
    from inventory.models import (
        GPU,
        NIC,
        Allocation,
        Cable,
        ComponentSwap,
        Node,
        Pod,
        Rack,
        SpareStock,
        Switch,
        SwitchPort,
    )
    from jobs.models import Job
    from portal.models import Action, APIToken, AuditEntry, Tenant, User

    tenant_admin = User.objects.get(username="demo-tenant-admin")
    own_tenant = tenant_admin.tenant
    allocation = Allocation.objects.filter(tenant=own_tenant).order_by("pk").first()
    node = allocation.nodes.order_by("hostname").first() if allocation else None
    other_node = Node.objects.exclude(allocations__tenant=own_tenant).order_by("hostname").first()
    own_nic = NIC.objects.filter(node=node, role="rail").order_by("device").first()
    switch = Switch.objects.filter(role="leaf").order_by("hostname").first()
    own_cable = Cable.objects.filter(Q(a_nic=own_nic) | Q(b_nic=own_nic)).first()
    world = {
        "own_tenant": _brief(own_tenant, "slug"),
        "other_tenant": _brief(
            Tenant.objects.exclude(pk=own_tenant.pk).order_by("slug").first(), "slug"
        ),
        "allocation": _brief(allocation),
        "node": _brief(node, "hostname"),
        "other_node": _brief(other_node, "hostname"),
        "own_gpu": _brief(GPU.objects.filter(node=node).order_by("index").first()),
        "other_gpu": _brief(GPU.objects.filter(node=other_node).order_by("index").first()),
        "own_nic": _brief(own_nic, "device"),
        "other_nic": _brief(
            NIC.objects.filter(node=other_node).order_by("device").first(), "device"
        ),
        "own_cable": _brief(own_cable),
        "pod": _brief(Pod.objects.order_by("name").first()),
        "rack": _brief(Rack.objects.order_by("name").first()),
        "switch": _brief(switch, "hostname"),
        "port": _brief(SwitchPort.objects.filter(switch=switch).order_by("name").first()),
        "own_job": _brief(Job.objects.filter(tenant=own_tenant).order_by("pk").first(), "job_id"),
        "other_job": _brief(
            Job.objects.exclude(tenant=own_tenant).exclude(tenant=None).order_by("pk").first(),
            "job_id",
        ),
        "action": _brief(Action.objects.order_by("pk").first()),
        "ticket": _brief(FaultTicket.objects.order_by("pk").first()),
        "intake": _brief(IntakeRecord.objects.order_by("pk").first()),
        "audit_entry": _brief(AuditEntry.objects.order_by("pk").first()),
        "foreign_token": _brief(APIToken.objects.filter(user__username="demo-admin").first()),
        "repair_case": _brief(RepairCase.objects.order_by("pk").first()),
        "spare_stock": _brief(SpareStock.objects.order_by("pk").first()),
        "window": _brief(MaintenanceWindow.objects.order_by("pk").first()),
        "own_swap": _brief(
            ComponentSwap.objects.filter(node=node).order_by("pk").first(), "serial_in"
        ),
        "other_swap": _brief(
            ComponentSwap.objects.filter(node=other_node).order_by("pk").first(), "serial_in"
        ),
    }
    print(json.dumps(world))


def fail_node(hostname: str, down: bool) -> None:
    """Fail (or recover) a node in the demo's Slurm simulator, as a hardware fault would."""
    from jobs.drivers.base import get_slurm_driver

    driver = get_slurm_driver()
    if down:
        driver.fail_node(hostname)
    else:
        driver.recover_node(hostname)


def periodic_runs() -> None:
    """Which process ran each periodic task last, as JSON: {task: [host:pid, finished]}."""
    from portal.models import PeriodicTaskState

    print(
        json.dumps(
            {
                state.task: [state.last_run_by, state.last_finished_at is not None]
                for state in PeriodicTaskState.objects.all()
            }
        )
    )
