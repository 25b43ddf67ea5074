"""The maintenance window story's middle in real headless Chromium (issue 26 item 7), against
the real slurmctld and the SONiC emulator over SSH, through a real Celery worker: a window over
a leaf, planned on the calendar, is started from it while a real job runs on one of the leaf's
nodes; its maintenance's Action page shows it waiting for that job, without a reload; once the
job is cancelled the ports are shut; "End now" is one Action that brings back exactly the ports
the window shut (one shut before stays down) and resumes exactly the nodes it drained.
Screenshots at 1280 and 1920 px in test-artifacts/window-story-*.

The leaf's two nodes are gpu071 and gpu072 of the shared test cluster (this test's own).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from fabric.maintenance_windows import WINDOW_END_ACTION
from fabric.models import Maintenance, MaintenanceWindow
from portal.models import Action, Role
from tests.conftest import ARTIFACTS, PortalServerProcess
from tests.fabric.driver_contract import (
    CONTRACT_LEAF,
    CONTRACT_SPINE,
    EMULATOR_LOGIN,
    EmulatorThread,
    write_credentials,
)
from tests.fabric.test_switch_actions import build_action_inventory, switch_url
from tests.jobs.slurm_fixtures import sinfo_state_and_reason
from tests.support import sign_in_page, wait_for

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.emulator, pytest.mark.browser,
              pytest.mark.django_db(transaction=True)]

NODES = ("gpu071", "gpu072")  # behind leaf01's Ethernet0 and Ethernet4 in this inventory
JOB_NAME = "window-story-test"
# Slurm reservations are named after the window's id, and the test cluster is shared by test
# databases that all count windows from 1: this test's windows count from here instead.
FIRST_WINDOW_ID = 7100


@pytest.fixture
def emulator(tmp_path):
    fabric = EmulatorThread([CONTRACT_LEAF, CONTRACT_SPINE], tmp_path / "host-keys")
    yield fabric
    fabric.stop()


@pytest.fixture
def inventory(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('fabric_maintenancewindow', 'id'), "
                       "%s, false)", [FIRST_WINDOW_ID])
    return build_action_inventory(NODES)


@pytest.fixture
def cluster(real_slurm):
    def clean() -> None:
        real_slurm.cancel_jobs(real_slurm.run(
            "squeue", "-h", "-n", JOB_NAME, "-o", "%i").stdout.split())
        for window_id in range(FIRST_WINDOW_ID, FIRST_WINDOW_ID + 3):
            real_slurm.run("scontrol", "delete", f"ReservationName=portal-maint-{window_id}",
                           check=False)
        real_slurm.restore_nodes(list(NODES))

    real_slurm.cancel_jobs(real_slurm.run(
        "squeue", "-h", "-w", ",".join(NODES), "-o", "%i").stdout.split())
    clean()
    yield real_slurm
    clean()


@pytest.fixture
def server(celery_worker_process, emulator, cluster, settings, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(emulator.known_hosts())
    credentials = write_credentials(tmp_path / "credentials.yaml.json",
                                    {"sonic/leaf": EMULATOR_LOGIN, "sonic/spine": EMULATOR_LOGIN})
    environment = {
        "FABRIC_DRIVER": "fabric.drivers.ssh.SonicSshDriver",
        "FABRIC_CREDENTIALS_FILE": str(credentials),
        "FABRIC_KNOWN_HOSTS_FILE": str(known_hosts),
        "FABRIC_SWITCH_ENDPOINTS": json.dumps({
            name: f"{emulator.host}:{emulator.port_of(name)}" for name in ("leaf01", "spine01")
        }),
        "FABRIC_SSH_CONNECT_TIMEOUT": "3",
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": cluster.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
        "MAINTENANCE_CHECK_SECONDS": "1",
    }
    celery_worker_process.extra_env = environment
    celery_worker_process.start()
    process = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    process.extra_env = dict(environment)
    process.start()
    yield process
    process.stop()


def admin_status(emulator, port: str) -> str:
    return emulator.config_db("leaf01", f"PORT|{port}")["admin_status"]


def shoot(page, name: str) -> None:
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"window-story-{name}-{width}.png"), full_page=True)


def succeeded(action_id: int, what: str, timeout: float = 60) -> Action:
    def done():
        action = Action.objects.get(pk=action_id)
        return action if action.is_terminal else None

    action = wait_for(done, timeout, what)
    assert action.status == "succeeded", (action.kind, action.last_error, action.result)
    return action


def test_a_window_started_from_the_calendar_waits_for_the_job_shuts_and_ends_as_one_action(
    server, browser_page, make_user, emulator, inventory, cluster, operator_api
):
    shut_before = operator_api.post(
        switch_url(inventory.leaf, "ports/admin"),
        {"ports": ["Ethernet4"], "state": "down", "reason": "bad optic"}, format="json")
    succeeded(shut_before.data["id"], "Ethernet4 shut before the window", 30)
    job = cluster.submit_job(nodes=[NODES[0]], gpus_per_node=8, seconds=600, name=JOB_NAME)
    wait_for(lambda: cluster.job_state(job) == "RUNNING", 60, f"job {job} to run")

    page = browser_page
    sign_in_page(page, server.url, make_user(Role.OPERATOR))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server.url}/fabric/maintenance/")
    start = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    page.fill("#planned_start", start.strftime("%Y-%m-%dT%H:%M"))
    page.fill("#planned_end", (start + timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M"))
    page.fill("#switches", "leaf01")
    page.fill("#reason", "replace the PSU of leaf01")
    page.locator("#plan-window button[type=submit]").click()
    window = MaintenanceWindow.objects.get()
    assert window.pk >= FIRST_WINDOW_ID
    succeeded(window.reservation_action_id, "the window's MAINT reservation", 30)
    row = page.locator(f'tr[data-window="{window.pk}"]')
    expect(row).to_contain_text("scheduled")
    shoot(page, "1-planned")

    # Started from the calendar while the job runs: its maintenance waits for the job, live.
    page.set_viewport_size({"width": 1280, "height": 900})
    row.get_by_role("button", name="Start now").click()
    expect(row).to_contain_text("running")
    # Started two days early: the row says when it really started.
    expect(row).to_contain_text(f"started {timezone.now():%Y-%m-%d}")
    shoot(page, "2-calendar-running")
    page.set_viewport_size({"width": 1280, "height": 900})
    row.locator("a").filter(has_text="leaf01: starting").click()
    page.wait_for_url("**/actions/*/", timeout=15_000)
    progress = page.locator("[data-field=progress]", has_text="waiting for 1 job")
    progress.wait_for(timeout=60_000)  # without a reload: the drain, then the wait
    assert job in progress.inner_text() and NODES[0] in progress.inner_text()
    assert admin_status(emulator, "Ethernet0") == "up"  # nothing shut under the running job
    shoot(page, "2-waiting-for-the-job")

    cluster.cancel_jobs([job])
    page.wait_for_selector("[data-field=status] .status-succeeded", timeout=90_000)
    assert admin_status(emulator, "Ethernet0") == "down"
    maintenance = Maintenance.objects.get(window=window)
    assert maintenance.shut_ports == ["Ethernet0"]  # Ethernet4 was down before: not its own
    expect(page.locator("[data-field=progress]")).to_have_text(
        "shut 1 port; 1 was down already and is left as it was")
    shoot(page, "3-shut")
    # While it runs, the leaf's pages and the grid badge it.
    page.goto(f"{server.url}/inventory/switches/leaf01/")
    expect(page.locator("#switch-window-badge")).to_contain_text(f"window #{window.pk}")
    shoot(page, "3-switch-page")
    page.goto(f"{server.url}/")
    expect(page.locator(f"#node-cell-{NODES[0]}")).to_have_attribute(
        "data-maintenance", str(window.pk))
    shoot(page, "3-dashboard")

    # End now: one Action over the whole window.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server.url}/fabric/maintenance/")
    row.get_by_role("button", name="End now").click()
    expect(row).to_contain_text("ended")
    window.refresh_from_db()
    end = Action.objects.get(kind=WINDOW_END_ACTION)
    assert window.end_action_id == end.pk
    assert not Action.objects.filter(kind="fabric.maintenance_end").exists()
    row.locator("[data-window-end-action]").click()
    page.wait_for_selector("[data-field=status] .status-succeeded", timeout=60_000)
    end = succeeded(end.pk, "the end of the window")
    assert admin_status(emulator, "Ethernet0") == "up"
    assert admin_status(emulator, "Ethernet4") == "down"  # not the window's to start
    assert end.result["resumed"] == list(NODES)
    for name in NODES:
        state, _ = sinfo_state_and_reason(cluster, name)
        assert "drain" not in state and "drng" not in state, (name, state)
    shoot(page, "4-ended")
