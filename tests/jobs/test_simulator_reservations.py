"""Reservations in the simulated Slurm (they back tenants' allocations): created,
updated and deleted like `scontrol create/update/delete reservation`, reserved nodes run only
the reservation's accounts, IGNORE_JOBS does not wait for running jobs; and the allocation's
"slurm.reservation_sync" Action carries the allocation into the simulator end to end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.allocations import RESERVATION_SYNC_ACTION, allocation_create, allocation_end
from inventory.models import LifecycleStatus, Node
from jobs.drivers.base import (
    SlurmRejected,
    SlurmReservation,
    SlurmUnavailable,
    get_slurm_driver,
    reset_slurm_driver,
)
from jobs.reservations import RESERVATION_FLAGS
from portal.models import Action, ActionStatus
from portal.services.actions import run_action

HOUR = timedelta(hours=1)


def reservation(clock, **overrides) -> SlurmReservation:
    fields = {
        "name": "alloc-1",
        "accounts": ("tenant-a",),
        "node_names": ("gpu001", "gpu002"),
        "start": clock.now,
        "end": clock.now + 24 * HOUR,
        "flags": ("IGNORE_JOBS",),
    }
    return SlurmReservation(**{**fields, **overrides})


def flags_of(driver, name: str) -> tuple[str, ...]:
    (node,) = driver.nodes([name])
    return node.flags


def job_state(driver, job_id: str) -> tuple[str, str] | None:
    job = next((job for job in driver.jobs() if job.job_id == job_id), None)
    return None if job is None else (job.state, job.state_reason)


def test_create_reads_back_and_marks_the_nodes_reserved(make_simulator, clock):
    driver = make_simulator(nodes=4)
    wanted = reservation(clock, node_names=("gpu002", "gpu001"))

    driver.create_or_update_reservation(wanted)

    (created,) = driver.reservations()
    assert created == reservation(clock)  # node names come back in name order
    assert {
        name for name in ("gpu001", "gpu002", "gpu003") if "RESERVED" in flags_of(driver, name)
    } == {
        "gpu001",
        "gpu002",
    }
    assert driver.nodes(["gpu001"])[0].display_state == "idle"


def test_create_twice_is_one_reservation_and_update_moves_it(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(reservation(clock))
    clock.advance(minutes=5)
    # A re-sync asks for "now" again: the reservation in force keeps its start.
    driver.create_or_update_reservation(reservation(clock))
    assert driver.reservations() == [reservation(clock, start=clock.now - timedelta(minutes=5))]

    driver.create_or_update_reservation(
        reservation(clock, node_names=("gpu003",), end=clock.now + 2 * HOUR)
    )

    (updated,) = driver.reservations()
    assert updated.node_names == ("gpu003",)
    assert updated.end == clock.now + 2 * HOUR
    assert "RESERVED" not in flags_of(driver, "gpu001")
    assert "RESERVED" in flags_of(driver, "gpu003")


def test_delete_is_idempotent(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(reservation(clock))

    driver.delete_reservation("alloc-1")
    driver.delete_reservation("alloc-1")
    driver.delete_reservation("never-existed")

    assert driver.reservations() == []
    assert "RESERVED" not in flags_of(driver, "gpu001")


def test_unknown_node_is_rejected_and_nothing_changes(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(reservation(clock))

    with pytest.raises(SlurmRejected, match="gpu999"):
        driver.create_or_update_reservation(reservation(clock, node_names=("gpu003", "gpu999")))
    with pytest.raises(SlurmRejected, match="gpu999"):
        driver.create_or_update_reservation(
            reservation(clock, name="other", node_names=("gpu999",))
        )

    assert driver.reservations() == [reservation(clock)]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "two words"}, "reservation name"),
        ({"name": ""}, "reservation name"),
        ({"accounts": ()}, "account"),
        ({"accounts": ("tenant a",)}, "account"),
        ({"node_names": ()}, "no node"),
        ({"node_names": ("gpu[001-002]",)}, "hostname"),
        ({"flags": ("ignore jobs",)}, "flag"),
        ({"end_before_start": True}, "after the start"),
    ],
)
def test_malformed_reservations_are_rejected(make_simulator, clock, overrides, message):
    driver = make_simulator(nodes=4)
    if overrides.pop("end_before_start", False):
        overrides["end"] = clock.now - HOUR

    with pytest.raises(SlurmRejected, match=message):
        driver.create_or_update_reservation(reservation(clock, **overrides))

    assert driver.reservations() == []


def test_reserved_nodes_run_only_the_reservations_accounts(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(reservation(clock))

    outsider = driver.submit_job(nodes=["gpu001"], seconds=600, account="sakura", name="outsider")
    tenant = driver.submit_job(nodes=["gpu002"], seconds=600, account="tenant-a", name="tenant")
    elsewhere = driver.submit_job(nodes=["gpu003"], seconds=600, account="sakura")

    assert job_state(driver, outsider) == ("PENDING", "ReqNodeNotAvail")
    assert job_state(driver, tenant)[0] == "RUNNING"
    assert job_state(driver, elsewhere)[0] == "RUNNING"
    # Once the reservation is gone the outsider's job starts.
    driver.delete_reservation("alloc-1")
    assert job_state(driver, outsider)[0] == "RUNNING"


def test_the_generated_workload_keeps_off_reserved_nodes(make_simulator, clock):
    driver = make_simulator(nodes=6, mean_arrival_seconds=300)
    driver.create_or_update_reservation(
        reservation(clock, accounts=("tenant-a",), node_names=("gpu001", "gpu002", "gpu003"))
    )
    seen_outside = 0
    for _ in range(40):  # 20 hours, within the reservation's 24
        clock.advance(minutes=30)
        for job in driver.jobs():
            if job.state != "RUNNING":
                continue
            on_reserved = set(job.node_names) & {"gpu001", "gpu002", "gpu003"}
            assert not on_reserved or job.account == "tenant-a", job
            seen_outside += job.account != "tenant-a"
    assert seen_outside, "no job of another account ran at all: the check proved nothing"


def test_without_ignore_jobs_busy_nodes_refuse_the_reservation(make_simulator, clock):
    driver = make_simulator(nodes=4)
    running = driver.submit_job(nodes=["gpu002"], seconds=3600, account="sakura")

    with pytest.raises(SlurmRejected, match=r"busy.*gpu002"):
        driver.create_or_update_reservation(reservation(clock, flags=()))
    assert driver.reservations() == []

    # A job of the reservation's own account does not stand in the way.
    driver.cancel_jobs([running])
    driver.submit_job(nodes=["gpu002"], seconds=3600, account="tenant-a")
    driver.create_or_update_reservation(reservation(clock, flags=()))
    assert [r.name for r in driver.reservations()] == ["alloc-1"]


def test_ignore_jobs_takes_effect_at_once_and_lets_running_jobs_finish(make_simulator, clock):
    driver = make_simulator(nodes=4)
    running = driver.submit_job(nodes=["gpu002"], seconds=3600, account="sakura")

    driver.create_or_update_reservation(reservation(clock))

    (created,) = driver.reservations()
    assert created.start == clock.now  # it did not wait for the job
    assert job_state(driver, running)[0] == "RUNNING"
    node = driver.nodes(["gpu002"])[0]
    assert node.state == "allocated" and "RESERVED" in node.flags
    # The next job of another account waits although the running one has just ended.
    clock.advance(minutes=61)
    assert job_state(driver, running) is None
    waiting = driver.submit_job(nodes=["gpu002"], seconds=60, account="sakura")
    assert job_state(driver, waiting) == ("PENDING", "ReqNodeNotAvail")


def test_a_reservation_ends_by_itself_and_a_future_one_starts_by_itself(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.create_or_update_reservation(reservation(clock, end=clock.now + HOUR))
    driver.create_or_update_reservation(
        reservation(clock, name="later", node_names=("gpu003",), start=clock.now + 2 * HOUR)
    )
    waiting = driver.submit_job(nodes=["gpu001"], seconds=60, account="sakura")
    assert job_state(driver, waiting) == ("PENDING", "ReqNodeNotAvail")
    assert "RESERVED" not in flags_of(driver, "gpu003")

    clock.advance(minutes=90)
    assert [r.name for r in driver.reservations()] == ["later"]
    assert job_state(driver, waiting) is None  # started when the reservation ended, and ran
    assert "RESERVED" not in flags_of(driver, "gpu003")

    clock.advance(hours=1)
    assert "RESERVED" in flags_of(driver, "gpu003")


def test_controller_down_is_unavailable(make_simulator, clock):
    driver = make_simulator(nodes=4)
    driver.set_controller_up(False)
    with pytest.raises(SlurmUnavailable):
        driver.reservations()
    with pytest.raises(SlurmUnavailable):
        driver.create_or_update_reservation(reservation(clock))
    with pytest.raises(SlurmUnavailable):
        driver.delete_reservation("alloc-1")
    driver.set_controller_up(True)
    assert driver.reservations() == []


# --- the allocation's Action against the simulator, end to end ------------------------------


@pytest.fixture
def simulator_as_the_driver(db, settings):
    """The configured driver is a quiet simulator following the inventory, in real time."""
    settings.SLURM_DRIVER = "jobs.drivers.simulator.SimulatorDriver"
    settings.SLURM_SIMULATOR = {
        "history_hours": 0,
        "mean_failure_seconds": 0,
        "mean_arrival_seconds": 10**9,
    }
    reset_slurm_driver()
    yield
    reset_slurm_driver()


def run_reservation_sync() -> Action:
    action = Action.objects.filter(kind=RESERVATION_SYNC_ACTION).order_by("-pk").first()
    outcome = run_action(action_id=action.pk)
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED, (outcome, action.last_error)
    return action


def test_allocation_reservation_sync_action_end_to_end(simulator_as_the_driver, tenant_a):
    for number in range(1, 7):
        Node.objects.create(hostname=f"gpu{number:03d}", status=LifecycleStatus.ACTIVE)
    now = timezone.now()
    allocation = allocation_create(
        tenant=tenant_a, hostlist="gpu[002-004]", start=now - HOUR, end=now + 24 * HOUR
    )

    run_reservation_sync()

    driver = get_slurm_driver()
    (held,) = driver.reservations()
    assert held.name == f"alloc-{allocation.pk}"
    assert held.accounts == (tenant_a.slurm_account,)
    assert held.node_names == ("gpu002", "gpu003", "gpu004")
    assert held.end == allocation.end
    assert held.flags == RESERVATION_FLAGS
    assert "RESERVED" in driver.nodes(["gpu003"])[0].flags

    allocation_end(allocation=allocation)
    run_reservation_sync()

    assert driver.reservations() == []
    assert "RESERVED" not in driver.nodes(["gpu003"])[0].flags
