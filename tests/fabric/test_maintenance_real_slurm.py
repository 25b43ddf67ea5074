"""A leaf maintenance against the real slurmctld and the SONiC emulator over SSH, through a real
Celery worker: with a job still running on a node behind the leaf, no port is shut until the job
has ended; then the end starts exactly the ports it shut and resumes exactly the nodes it drained.
The same story is then told in real headless Chromium, as an operator sees it (issue 26 item 7).

Issue 26: the port-shutdown ran about a second after the drain Action, while gpu011 was still
"draining" with job 1098 on it.
"""

from __future__ import annotations

import json
import time

import pytest

from fabric.models import Maintenance
from portal.models import Action, ActionStatus, Role
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
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.emulator,
              pytest.mark.django_db(transaction=True)]

NODES = ["gpu001", "gpu002"]  # behind leaf01's Ethernet0 and Ethernet4 in the inventory


@pytest.fixture
def emulator(tmp_path):
    fabric = EmulatorThread([CONTRACT_LEAF, CONTRACT_SPINE], tmp_path / "host-keys")
    yield fabric
    fabric.stop()


@pytest.fixture
def inventory(transactional_db):
    return build_action_inventory()


@pytest.fixture
def cluster(real_slurm):
    real_slurm.cancel_jobs([line for line in real_slurm.run(
        "squeue", "-h", "-w", ",".join(NODES), "-o", "%i").stdout.split()])
    real_slurm.restore_nodes(NODES)
    yield real_slurm
    real_slurm.cancel_jobs([line for line in real_slurm.run(
        "squeue", "-h", "-n", "maintenance-test", "-o", "%i").stdout.split()])
    real_slurm.restore_nodes(NODES)


@pytest.fixture
def worker(celery_worker_process, emulator, cluster, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(emulator.known_hosts())
    credentials = write_credentials(tmp_path / "credentials.yaml.json",
                                    {"sonic/leaf": EMULATOR_LOGIN, "sonic/spine": EMULATOR_LOGIN})
    celery_worker_process.extra_env = {
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
    celery_worker_process.start()
    return celery_worker_process


def admin_status(emulator, port: str) -> str:
    return emulator.config_db("leaf01", f"PORT|{port}")["admin_status"]


def post(client, url: str, body: dict) -> Action:
    response = client.post(url, body, format="json")
    assert response.status_code == 202, response.content
    return Action.objects.get(pk=response.data["id"])


def test_no_port_is_shut_while_a_job_runs_on_a_drained_node_and_the_end_undoes_exactly_it(
    worker, emulator, inventory, cluster, operator_api
):
    # Ethernet4 was shut before the maintenance (another fault): the end must leave it down.
    shut = post(operator_api, switch_url(inventory.leaf, "ports/admin"),
                {"ports": ["Ethernet4"], "state": "down", "reason": "bad optic"})
    wait_for(lambda: Action.objects.get(pk=shut.pk).status == "succeeded", 30, "Ethernet4 shut")
    job = cluster.submit_job(nodes=["gpu001"], gpus_per_node=8, seconds=600,
                             name="maintenance-test")
    wait_for(lambda: cluster.job_state(job) == "RUNNING", 60, f"job {job} to run")

    start = post(operator_api, switch_url(inventory.leaf, "maintenance"),
                 {"reason": "swap PSU"})

    def waiting_for_the_job():
        start.refresh_from_db()
        assert not start.is_terminal, start.last_error
        result = start.result or {}
        return result if result.get("phase") == "waiting_for_jobs" else None

    progress = wait_for(waiting_for_the_job, 60, "the maintenance to wait for the job")
    assert Action.objects.get(pk=start.parameters["drain_action_id"]).status == "succeeded"
    assert [entry["job_id"] for entry in progress["jobs"]] == [job]
    assert progress["progress"] == f"waiting for 1 job ({job}) on 1 node (gpu001)"
    assert sinfo_state_and_reason(cluster, "gpu001")[0] in ("drng", "mix-", "drain")
    # Several checks later (one a second), the job still runs and no port was shut.
    time.sleep(5)
    start.refresh_from_db()
    assert start.status in (ActionStatus.QUEUED, ActionStatus.RUNNING)
    assert start.attempts <= 1  # waiting uses up no attempt
    assert admin_status(emulator, "Ethernet0") == "up"
    assert Maintenance.objects.get(start_action=start).shut_ports is None

    cluster.cancel_jobs([job])
    wait_for(lambda: Action.objects.get(pk=start.pk).is_terminal, 90, "the ports to be shut")
    start.refresh_from_db()
    assert start.status == ActionStatus.SUCCEEDED, start.last_error
    assert admin_status(emulator, "Ethernet0") == "down"
    assert start.result["ports_already_down"] == ["Ethernet4"]
    maintenance = Maintenance.objects.get(start_action=start)
    assert (maintenance.status, maintenance.shut_ports) == ("active", ["Ethernet0"])
    # The uplink to the spine is not host-facing: it stays up.
    assert admin_status(emulator, "Ethernet8") == "up"

    end = post(operator_api, switch_url(inventory.leaf, "maintenance/end"),
               {"reason": "PSU swapped"})
    wait_for(lambda: Action.objects.get(pk=end.pk).is_terminal, 60, "the end")
    end.refresh_from_db()
    assert end.status == ActionStatus.SUCCEEDED, end.last_error
    assert admin_status(emulator, "Ethernet0") == "up"
    assert admin_status(emulator, "Ethernet4") == "down"  # not this maintenance's to start
    assert end.result["resumed"] == NODES
    for name in NODES:
        state, _ = sinfo_state_and_reason(cluster, name)
        assert "drain" not in state and "drng" not in state, (name, state)
    maintenance.refresh_from_db()
    assert maintenance.status == "ended"


@pytest.fixture
def server(worker, settings):
    process = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    process.extra_env = dict(worker.extra_env)
    process.start()
    yield process
    process.stop()


def shoot(page, name: str) -> None:
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"maintenance-story-{name}-{width}.png"),
                        full_page=True)


@pytest.mark.browser
def test_in_chromium_a_leaf_maintenance_waits_for_the_running_job_then_shuts_and_ends(
    server, browser_page, make_user, emulator, inventory, cluster, operator_api
):
    shut = operator_api.post(switch_url(inventory.leaf, "ports/admin"),
                             {"ports": ["Ethernet4"], "state": "down", "reason": "bad optic"},
                             format="json")
    wait_for(lambda: Action.objects.get(pk=shut.data["id"]).status == "succeeded", 30,
             "Ethernet4 shut before the maintenance")
    job = cluster.submit_job(nodes=["gpu001"], gpus_per_node=8, seconds=600,
                             name="maintenance-test")
    wait_for(lambda: cluster.job_state(job) == "RUNNING", 60, f"job {job} to run")

    page = browser_page
    sign_in_page(page, server.url, make_user(Role.OPERATOR))
    page.goto(f"{server.url}/fabric/switches/{inventory.leaf.pk}/maintenance/")
    assert "gpu[001-002]" in page.locator("[data-field=nodes]").inner_text()
    page.check("input[name=mode][value=drain]")
    page.fill("#reason", "swap PSU")
    shoot(page, "1-confirm")
    page.click("#confirm-form button[type=submit]")
    page.wait_for_url("**/actions/*/", timeout=15_000)

    # Live, without a reload: the drain went through and the maintenance waits for the job.
    start = Action.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))

    def waiting():
        start.refresh_from_db()
        assert not start.is_terminal, (start.status, start.last_error, start.result)
        return (start.result or {}).get("phase") == "waiting_for_jobs"

    wait_for(waiting, 60, f"the maintenance to wait for the job: {start.result}")
    progress = page.locator("[data-field=progress]", has_text="waiting for 1 job")
    progress.wait_for(timeout=15_000)  # visible without a reload
    assert job in progress.inner_text() and "gpu001" in progress.inner_text()
    assert admin_status(emulator, "Ethernet0") == "up"  # nothing shut under the running job
    shoot(page, "2-waiting")

    cluster.cancel_jobs([job])
    page.wait_for_selector("[data-field=status] .status-succeeded", timeout=90_000)
    assert admin_status(emulator, "Ethernet0") == "down"
    maintenance = Maintenance.objects.get()
    assert maintenance.shut_ports == ["Ethernet0"]  # Ethernet4 was already down: not its own
    shoot(page, "3-shut")

    page.goto(f"{server.url}/fabric/switches/{inventory.leaf.pk}/maintenance/end/")
    page.fill("#reason", "PSU swapped")
    shoot(page, "4-end-confirm")
    page.click("#confirm-form button[type=submit]")
    page.wait_for_url("**/actions/*/", timeout=15_000)
    end = Action.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    wait_for(lambda: Action.objects.get(pk=end.pk).is_terminal, 60, "the end of maintenance")
    end.refresh_from_db()
    assert end.status == "succeeded", (end.kind, end.last_error, end.result)
    page.wait_for_selector("[data-field=status] .status-succeeded", timeout=15_000)
    assert admin_status(emulator, "Ethernet0") == "up"
    assert admin_status(emulator, "Ethernet4") == "down"  # not this maintenance's to start
    shoot(page, "5-ended")
