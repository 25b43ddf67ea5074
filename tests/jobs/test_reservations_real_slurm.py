"""A tenant's allocation as a Slurm reservation, end to end: allocation_create / update / end /
delete -> "slurm.reservation_sync" Action -> real Celery worker -> CLI driver -> the real
slurmctld, checked with Slurm's own `scontrol -o show reservation`.

Run: .venv/bin/python -m pytest tests/jobs/test_reservations_real_slurm.py -q
Needs root, MariaDB, PostgreSQL and Redis (DATABASE_URL / REDIS_URL), like `make test`.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from inventory.allocations import (
    RESERVATION_SYNC_ACTION,
    allocation_create,
    allocation_delete,
    allocation_end,
    allocation_update,
    reservation_name,
)
from inventory.hostlist import expand_hostlist
from jobs.drivers.base import SlurmRejected, SlurmReservation, SlurmUnavailable
from jobs.drivers.cli import ScontrolDriver
from portal.models import Action, ActionStatus, Tenant

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm, fleet
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ACTION_TIMEOUT = 30
# An account of its own, so that the reservation's Accounts= is proven to be the tenant's.
SLURM_ACCOUNT = "resv-tenant"


@pytest.fixture(scope="module", autouse=True)
def _reservation_account(real_slurm):
    cluster = real_slurm
    # Accounts= must name an account slurmdbd knows; -i exits 1 "Nothing new added" if it exists.
    proc = cluster.run(
        "sacctmgr",
        "-i",
        "add",
        "account",
        SLURM_ACCOUNT,
        f"cluster={cluster.info['cluster']}",
        check=False,
    )
    assert proc.returncode == 0 or "Nothing new added" in proc.stdout + proc.stderr, proc


@pytest.fixture(autouse=True)
def _no_reservations_left(real_slurm):
    yield
    for name in slurm_reservations(real_slurm):
        if name.startswith("alloc-") or name.startswith("contract-"):
            real_slurm.run("scontrol", "delete", f"ReservationName={name}", check=False)


@pytest.fixture
def tenant(transactional_db) -> Tenant:
    return Tenant.objects.create(
        name="Reservation Tenant", slug="resv", slurm_account=SLURM_ACCOUNT, evpn_vni=10900
    )


@pytest.fixture
def worker(celery_worker_process, real_slurm):
    celery_worker_process.extra_env = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": real_slurm.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
    }
    celery_worker_process.start()
    return celery_worker_process


def slurm_reservations(real_slurm) -> dict[str, dict[str, str]]:
    """{name: {key: value}} from `scontrol -o show reservation`, read without any portal code."""
    out = real_slurm.run("scontrol", "-o", "show", "reservation").stdout
    return {
        fields["ReservationName"]: fields
        for fields in (dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines())
        if "ReservationName" in fields
    }


def latest_sync(allocation_pk: int) -> Action:
    return (
        Action.objects.filter(kind=RESERVATION_SYNC_ACTION, parameters__allocation_id=allocation_pk)
        .order_by("-pk")
        .first()
    )


def wait_succeeded(action: Action) -> Action:
    deadline = time.monotonic() + ACTION_TIMEOUT
    while time.monotonic() < deadline:
        action.refresh_from_db()
        if action.status == ActionStatus.SUCCEEDED:
            return action
        if action.is_terminal:
            break
        time.sleep(0.1)
    pytest.fail(f"Action #{action.pk} is {action.status}: {action.last_error}")


def slurm_time(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat()


def test_reservation_follows_the_allocation_through_its_life(worker, tenant, fleet, real_slurm):
    end = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    # Started a while ago: allocation_end ends it "now", not at start + 1 s still ahead.
    started = timezone.now() - timedelta(minutes=5)
    allocation = allocation_create(
        tenant=tenant, start=started, end=end, hostlist="gpu[013-014]", purpose="training"
    )
    name = reservation_name(allocation)

    wait_succeeded(latest_sync(allocation.pk))

    held = slurm_reservations(real_slurm)[name]
    assert expand_hostlist(held["Nodes"]) == ["gpu013", "gpu014"]
    assert held["Accounts"] == SLURM_ACCOUNT
    assert held["EndTime"] == slurm_time(end)
    assert "IGNORE_JOBS" in held["Flags"].split(",")
    assert held["State"] == "ACTIVE"

    later = end + timedelta(hours=1)
    allocation_update(allocation=allocation, end=later, hostlist="gpu[015-017]")
    wait_succeeded(latest_sync(allocation.pk))

    held = slurm_reservations(real_slurm)[name]
    assert expand_hostlist(held["Nodes"]) == ["gpu015", "gpu016", "gpu017"]
    assert held["EndTime"] == slurm_time(later)
    assert held["Accounts"] == SLURM_ACCOUNT

    allocation_end(allocation=allocation)
    ended = wait_succeeded(latest_sync(allocation.pk))

    assert ended.result == {"reservation": name, "deleted": True}
    assert name not in slurm_reservations(real_slurm)


def test_deleting_an_allocation_removes_its_reservation(worker, tenant, fleet, real_slurm):
    allocation = allocation_create(tenant=tenant, start=timezone.now(), hostlist="gpu018")
    name, pk = reservation_name(allocation), allocation.pk
    wait_succeeded(latest_sync(pk))
    assert expand_hostlist(slurm_reservations(real_slurm)[name]["Nodes"]) == ["gpu018"]

    allocation_delete(allocation=allocation)
    wait_succeeded(latest_sync(pk))

    assert name not in slurm_reservations(real_slurm)


def test_cli_driver_reads_back_what_it_wrote_and_reports_refusals(real_slurm):
    driver = ScontrolDriver(conf=real_slurm.conf, timeout=30)
    start = datetime.now(UTC).replace(microsecond=0)
    wanted = SlurmReservation(
        name="contract-resv",
        accounts=(SLURM_ACCOUNT,),
        node_names=("gpu019", "gpu020"),
        start=start,
        end=start + timedelta(hours=1),
        flags=("IGNORE_JOBS",),
    )

    driver.create_or_update_reservation(wanted)
    driver.create_or_update_reservation(wanted)  # a second time: an update, not a duplicate

    [held] = [r for r in driver.reservations() if r.name == "contract-resv"]
    assert (held.accounts, held.node_names, held.start, held.end) == (
        (SLURM_ACCOUNT,),
        ("gpu019", "gpu020"),
        start,
        start + timedelta(hours=1),
    )
    assert "IGNORE_JOBS" in held.flags

    with pytest.raises(SlurmRejected, match="Invalid account"):
        driver.create_or_update_reservation(
            SlurmReservation("contract-bad", ("no-such-account",), ("gpu012",), start)
        )
    with pytest.raises(SlurmRejected, match="not a valid reservation name"):
        driver.delete_reservation("x ReservationName=other")

    driver.delete_reservation("contract-resv")
    driver.delete_reservation("contract-resv")  # already gone: still a success
    assert "contract-resv" not in slurm_reservations(real_slurm)
    assert "contract-bad" not in slurm_reservations(real_slurm)


def test_cli_driver_reports_an_unreachable_controller_as_unavailable(real_slurm):
    # Each scontrol call waits ~10 s for the missing controller: two calls only.
    driver = ScontrolDriver(conf=real_slurm.conf, timeout=30)
    wanted = SlurmReservation(
        "contract-down", (SLURM_ACCOUNT,), ("gpu019",), datetime.now(UTC), None, ("IGNORE_JOBS",)
    )

    with real_slurm.controller_down():
        with pytest.raises(SlurmUnavailable, match="Unable to contact slurm controller"):
            driver.create_or_update_reservation(wanted)
        # Not "already gone": a delete that could not reach Slurm must be retried.
        with pytest.raises(SlurmUnavailable):
            driver.delete_reservation("contract-down")

    assert "contract-down" not in slurm_reservations(real_slurm)
