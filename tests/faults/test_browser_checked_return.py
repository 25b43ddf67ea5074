"""Issue 24 item 9: the on-call story in real headless Chromium, against the real slurmctld 22.05
of the tests, sushy-emulator as the node's BMC, a real worker and the real server. An XID 79 is
posted to the intake as the telemetry would; the ticket opens and drains the node; then, only by
clicking on the ticket: a BMC power cycle, the resume held until the node is validated, the
validation job run through Slurm in a maintenance reservation with its result on the ticket, the
node back in service, and the ticket resolved (recovery method from evidence) and verified.

The reboot through Slurm is not clicked: the test cluster has no RebootProgram on main (another
branch builds that harness), so `scontrol reboot` would leave the node waiting for a reboot that
never happens; the power cycle through the BMC is the restart this story takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faults.models import FaultTicket, RecoveryMethod
from inventory.models import GPU, Node
from jobs.validation_run import VALIDATE_ACTION
from portal.models import Action, Role
from portal.services.accounts import api_token_create
from tests.conftest import ARTIFACTS, PortalServerProcess
from tests.faults.conftest import xid_event
from tests.inventory.bmc_fixtures import sushy_emulator  # noqa: F401 - fixture
from tests.jobs.slurm_fixtures import sinfo_state_and_reason
from tests.support import sign_in_page, wait_for

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm
pytestmark = [pytest.mark.slurm, pytest.mark.worker, pytest.mark.browser,
              pytest.mark.django_db(transaction=True)]

NODE = "gpu016"  # a node of its own in the shared test cluster and the emulator
GPU_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "validation" / "gpu-check"


@pytest.fixture
def cluster(real_slurm):
    real_slurm.cancel_jobs(real_slurm.run("squeue", "-h", "-w", NODE, "-o", "%i").stdout.split())
    real_slurm.restore_nodes([NODE])
    yield real_slurm
    real_slurm.run("scontrol", "delete", "ReservationName=validate-FT-1", check=False)
    real_slurm.restore_nodes([NODE])


@pytest.fixture
def environment(cluster, sushy_emulator, tmp_path, settings):  # noqa: F811
    """The worker's and the server's settings: real Slurm through its CLI, the emulator's BMC."""
    env = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": cluster.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
        "BMC_DRIVER": "inventory.bmc.drivers.redfish.RedfishDriver",
        "BMC_CREDENTIALS_FILE": sushy_emulator["credentials_file"],
        "BMC_ENDPOINTS": json.dumps({NODE: sushy_emulator["url"]}),
        "BMC_POWER_DEADLINE_SECONDS": "30",
        "BMC_POLL_SECONDS": "0.25",
        "FAULTS_VALIDATION_COMMAND": str(GPU_CHECK),
        "FAULTS_VALIDATION_MINUTES": "5",
        "FAULTS_VALIDATION_OUTPUT_DIR": str(tmp_path),
    }
    # The test process syncs node states as the beat would, through the same Slurm.
    settings.SLURM_DRIVER = env["SLURM_DRIVER"]
    settings.SLURM_CONF = cluster.conf
    settings.BMC_ENDPOINTS = {NODE: sushy_emulator["url"]}
    from jobs.drivers.base import reset_slurm_driver

    reset_slurm_driver()
    yield env
    reset_slurm_driver()


@pytest.fixture
def server(celery_worker_process, environment, settings):
    celery_worker_process.extra_env = dict(environment)
    celery_worker_process.start()
    process = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    process.extra_env = dict(environment)
    process.start()
    yield process
    process.stop()


def gpu_node(sushy_emulator) -> Node:  # noqa: F811
    node = Node.objects.create(
        hostname=NODE, slurm_state="idle",
        bmc_system_id=sushy_emulator["systems"][NODE],
        bmc_credentials_ref=sushy_emulator["credentials_ref"],
    )
    for index in range(8):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-0016{index:04d}-0000-0000-0000-0000",
                           serial=f"165432201600{index}")
    return node


def shoot(page, name: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(ARTIFACTS / f"checked-return-{name}-1280.png"), full_page=True)


def synced_state() -> str:
    from jobs.sync import sync_node_states

    sync_node_states()
    return Node.objects.get(hostname=NODE).slurm_state


def newest(kind: str) -> Action:
    return Action.objects.filter(kind=kind).order_by("-pk").first()


def test_in_chromium_an_xid_79_goes_from_ticket_to_a_validated_node_back_in_service(
    server, browser_page, make_user, cluster, sushy_emulator  # noqa: F811
):
    gpu_node(sushy_emulator)
    import requests

    # The telemetry posts the XID to the intake; the policy opens a ticket and drains the node.
    _, key = api_token_create(user=make_user(Role.OPERATOR), name="dcgm exporter")
    posted = requests.post(f"{server.url}/api/faults/events/", timeout=10,
                           json=xid_event(node=NODE, gpu=3, message="Xid 79: GPU has fallen off"),
                           headers={"Authorization": f"Token {key}"})
    assert posted.status_code == 201, posted.text
    ticket = FaultTicket.objects.get()
    wait_for(lambda: sinfo_state_and_reason(cluster, NODE)[0] in ("drain", "drng"), 60,
             f"{NODE} drained by the policy")
    wait_for(lambda: synced_state() == "drained", 30, "the drain seen by the portal")

    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in_page(page, server.url, make_user(Role.OPERATOR))
    page.goto(f"{server.url}/faults/")
    page.locator(f"a[href='/faults/{ticket.pk}/']").first.click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    steps = page.locator("#ticket-recovery [data-step]")
    assert [steps.nth(i).get_attribute("data-step") for i in range(steps.count())] == [
        "reboot", "power_cycle", "validate", "resume"]
    shoot(page, "1-ticket-drained")

    # A cold restart through the BMC, one click.
    page.locator("#ticket-recovery button[data-step=power_cycle]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    power = newest("bmc.power")
    wait_for(lambda: Action.objects.get(pk=power.pk).is_terminal, 60, "the power cycle")
    power.refresh_from_db()
    assert power.status == "succeeded", power.last_error

    # Restarted, not validated: the resume asks for a reason and says why.
    page.reload()
    # Restarted: validating is now the primary step, the plain resume holds.
    assert page.locator("#ticket-recovery .btn-primary").first.get_attribute("data-step") == (
        "validate")
    page.locator("#ticket-recovery summary[data-step=resume]").click()
    held = page.locator("[data-override-needed=resume]")
    assert f"not validated since Action #{power.pk} (bmc.power power_cycle)" in held.inner_text()
    shoot(page, "2-power-cycled-resume-held")

    page.locator("#ticket-recovery button[data-step=validate]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    validation = newest(VALIDATE_ACTION)
    wait_for(lambda: Action.objects.get(pk=validation.pk).is_terminal, 120, "the validation")
    validation.refresh_from_db()
    assert validation.status == "succeeded", validation.last_error
    assert validation.result["passed"] is True
    # The test cluster is shared: another test's reboot may hold the node a moment longer.
    wait_for(lambda: sinfo_state_and_reason(cluster, NODE) == ("idle", "none"), 60,
             f"{NODE} idle in sinfo: {sinfo_state_and_reason(cluster, NODE)}")
    wait_for(lambda: synced_state() == "idle", 30, "the portal to see the node in service")

    page.reload()
    page.locator("[data-validation=passed]").wait_for(timeout=10_000)
    facts = page.locator("#ticket-validation").inner_text()
    assert f"job {validation.result['job_id']} COMPLETED" in facts
    assert "all 8 GPUs passed" in facts and str(GPU_CHECK) in facts
    assert page.locator("#ticket-timeline, body").first.inner_text().count("Validation passed")
    assert page.locator("#ticket-recovery [data-step]").count() == 0  # nothing to undo it
    shoot(page, "3-validated-in-service")

    # Verify: triaged, resolved with the recovery method the evidence gives, verified.
    for status in ("triaged", "resolved", "verified"):
        page.select_option("#to_status", status)
        if status == "resolved":
            assert page.locator("#recovery_method").input_value() == RecoveryMethod.COLD_REBOOT
        page.fill("#transition-note", f"{status}: validation job passed")
        page.locator("#ticket-workflow form.fault-form button[type=submit]").click()
        page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
        wait_for(lambda status=status: FaultTicket.objects.get(pk=ticket.pk).status == status,
                 10, f"the ticket {status}")
    ticket.refresh_from_db()
    assert ticket.recovery_method == RecoveryMethod.COLD_REBOOT
    assert ticket.validation["passed"] is True
    shoot(page, "4-verified")
