"""Issue 24 item 9: the on-call story in real headless Chromium, against the real slurmctld 22.05
of the tests, sushy-emulator as the node's BMC, a real worker and the real server. An XID 79 is
posted to the intake as the telemetry would; the ticket opens and drains the node; then, only by
clicking on the ticket: a BMC power cycle, the resume held until the node is validated, the
validation job run through Slurm in a maintenance reservation with its result on the ticket, the
node back in service, and the ticket resolved (recovery method from evidence) and verified.

The second path clicks "Reboot through Slurm" instead (on gpu062): `scontrol reboot ASAP
nextstate=DOWN`, slurmctld's RebootProgram power-cycles the node through its BMC (its own
sushy-emulator here, with a system for gpu062), scripts/bmc/slurmd_power_harness.py restarts the
node's slurmd in a fresh boot, and the reboot Action succeeds once slurmd registered again; the
node, back DOWN, is validated and resumed, and the ticket resolves as a warm reboot.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from faults.models import FaultTicket, RecoveryMethod
from inventory.models import GPU, Node
from jobs.validation_run import VALIDATE_ACTION
from portal.models import Action, Role
from portal.services.accounts import api_token_create
from tests.conftest import ARTIFACTS, PortalServerProcess
from tests.faults.conftest import xid_event
from tests.inventory.bmc_fixtures import (
    ROOT,
    sushy_emulator,  # noqa: F401 - fixture
)
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



# --- the second path: "Reboot through Slurm" ----------------------------------------------------
REBOOT_NODE = "gpu062"  # this story's own node of the shared cluster
# sushy-emulator's fake driver keeps every system in one process; the shared one of the tests has
# 16 (gpu001-016), so this path runs its own with a system for REBOOT_NODE.
STORY_BMC_DIR = "/tmp/portal-bmc-story-reboot"
STORY_BMC_PORT = "8680"


@pytest.fixture(scope="module")
def story_bmc() -> dict:
    environment = {**os.environ, "BMC_TEST_DIR": STORY_BMC_DIR, "BMC_TEST_PORT": STORY_BMC_PORT,
                   "BMC_TEST_NODES": str(int(REBOOT_NODE.removeprefix("gpu")))}
    result = subprocess.run(
        [str(ROOT / "scripts/bmc-up")], env=environment, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(f"scripts/bmc-up failed:\n{result.stderr[-3000:]}")
    started = json.loads(result.stdout.strip().splitlines()[-1])
    systems = json.loads(Path(started["systems_file"]).read_text())
    return {"url": systems["url"], "credentials_file": started["credentials_file"],
            "credentials_ref": systems["credentials_ref"], "systems": systems["systems"]}


@pytest.fixture
def reboot_cluster(real_slurm):
    real_slurm.cancel_jobs(
        real_slurm.run("squeue", "-h", "-w", REBOOT_NODE, "-o", "%i").stdout.split())
    real_slurm.restore_nodes([REBOOT_NODE])
    yield real_slurm
    real_slurm.run("scontrol", "delete", "ReservationName=validate-FT-1", check=False)
    real_slurm.run("scontrol", "cancel_reboot", REBOOT_NODE, check=False)
    real_slurm.restore_nodes([REBOOT_NODE])
    real_slurm.run("scontrol", "update", f"NodeName={REBOOT_NODE}", "State=RESUME", check=False)


@pytest.fixture
def reboot_environment(reboot_cluster, story_bmc, tmp_path, settings):
    env = {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": reboot_cluster.conf,
        "SLURM_COMMAND_TIMEOUT": "30",
        "SLURM_REBOOT_CHECK_SECONDS": "1",
        "BMC_DRIVER": "inventory.bmc.drivers.redfish.RedfishDriver",
        "BMC_CREDENTIALS_FILE": story_bmc["credentials_file"],
        "BMC_ENDPOINTS": json.dumps({REBOOT_NODE: story_bmc["url"]}),
        "BMC_POWER_DEADLINE_SECONDS": "30",
        "BMC_POLL_SECONDS": "0.25",
        "FAULTS_VALIDATION_COMMAND": str(GPU_CHECK),
        "FAULTS_VALIDATION_MINUTES": "5",
        "FAULTS_VALIDATION_OUTPUT_DIR": str(tmp_path),
    }
    settings.SLURM_DRIVER = env["SLURM_DRIVER"]
    settings.SLURM_CONF = reboot_cluster.conf
    settings.BMC_ENDPOINTS = {REBOOT_NODE: story_bmc["url"]}
    from jobs.drivers.base import reset_slurm_driver

    reset_slurm_driver()
    # slurmctld's RebootProgram runs manage.py slurm_reboot_program with what this file says
    # (scripts/slurm-up): this test's database and the story's BMC.
    db = settings.DATABASES["default"]
    program_env = {
        **{key: value for key, value in env.items() if key.startswith("BMC_")},
        "PORTAL_ROOT": str(ROOT),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:"
                        f"{db['PORT']}/{db['NAME']}",
        "REDIS_URL": os.environ.get("REDIS_URL", ""),
    }
    env_file = Path(reboot_cluster.conf).parent / "reboot-program.env"
    env_file.write_text(
        "".join(f"export {key}={shlex.quote(value)}\n" for key, value in program_env.items()))
    harness = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts/bmc/slurmd_power_harness.py"), "--bmc-dir",
         STORY_BMC_DIR, "--slurm-dir", str(Path(reboot_cluster.conf).parent), REBOOT_NODE],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert "following" in harness.stdout.readline()
    yield env
    harness.send_signal(signal.SIGTERM)
    harness.wait(timeout=10)
    env_file.unlink(missing_ok=True)
    reset_slurm_driver()
    # A story that failed half-way may leave the node's "host" off: its slurmd comes back.
    pid_file = Path(reboot_cluster.conf).parent / "run" / f"slurmd-{REBOOT_NODE}.pid"
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (OSError, ValueError):
        subprocess.run(["slurmd", "-N", REBOOT_NODE], env=reboot_cluster.env, check=False,
                       stdin=subprocess.DEVNULL, capture_output=True)  # fmt: skip


@pytest.fixture
def reboot_server(celery_worker_process, reboot_environment, settings):
    celery_worker_process.extra_env = dict(reboot_environment)
    celery_worker_process.start()
    process = PortalServerProcess(settings.DATABASES["default"]["NAME"])
    process.extra_env = dict(reboot_environment)
    process.start()
    yield process
    process.stop()


def test_in_chromium_the_ticket_reboots_the_node_through_slurm_and_brings_it_back_validated(
    reboot_server, browser_page, make_user, reboot_cluster, story_bmc
):
    from inventory.bmc.drivers.base import get_bmc_driver, reset_bmc_driver
    from inventory.bmc.targets import bmc_target

    node = Node.objects.create(
        hostname=REBOOT_NODE, slurm_state="idle", bmc_system_id=story_bmc["systems"][REBOOT_NODE],
        bmc_credentials_ref=story_bmc["credentials_ref"])
    for index in range(8):
        GPU.objects.create(node=node, index=index, uuid=f"GPU-0062{index:04d}-0000-0000-0000-0000",
                           serial=f"165432206200{index}")
    reset_bmc_driver()
    if get_bmc_driver().power_state(bmc_target(node)) != "On":
        get_bmc_driver().reset(bmc_target(node), "On")
    boot_before = reboot_cluster.run("scontrol", "-o", "show", "node", REBOOT_NODE).stdout
    import requests

    _, key = api_token_create(user=make_user(Role.OPERATOR), name="dcgm exporter")
    posted = requests.post(
        f"{reboot_server.url}/api/faults/events/", timeout=10,
        json=xid_event(node=REBOOT_NODE, gpu=2, message="Xid 79: GPU has fallen off"),
        headers={"Authorization": f"Token {key}"})  # fmt: skip
    assert posted.status_code == 201, posted.text
    ticket = FaultTicket.objects.get()
    wait_for(lambda: sinfo_state_and_reason(reboot_cluster, REBOOT_NODE)[0] in ("drain", "drng"),
             60, f"{REBOOT_NODE} drained by the policy")
    wait_for(lambda: synced(REBOOT_NODE) == "drained", 30, "the drain seen by the portal")

    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in_page(page, reboot_server.url, make_user(Role.OPERATOR))
    page.goto(f"{reboot_server.url}/faults/{ticket.pk}/")
    assert page.locator("#ticket-recovery button[data-step=reboot]").inner_text().startswith(
        "Reboot")

    # One click: Slurm reboots the node (RebootProgram -> BMC ForceOff, On -> fresh slurmd).
    page.locator("#ticket-recovery button[data-step=reboot]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    reboot = newest("slurm.reboot")
    wait_for(lambda: Action.objects.get(pk=reboot.pk).is_terminal, 150, "the reboot")
    reboot.refresh_from_db()
    assert reboot.status == "succeeded", reboot.last_error
    assert reboot.result["boot_times"][REBOOT_NODE]
    assert reboot_cluster.run("scontrol", "-o", "show", "node", REBOOT_NODE).stdout != boot_before
    power = Action.objects.filter(kind="bmc.power", target=REBOOT_NODE)
    assert sorted(a.parameters["operation"] for a in power if a.status == "succeeded") == [
        "force_off", "on"]
    # Back DOWN (nextstate=DOWN): validating is the primary step, the resume holds.
    wait_for(lambda: synced(REBOOT_NODE) == "down", 30, "the portal to see the node back down")
    page.reload()
    assert page.locator("#ticket-recovery .btn-primary").first.get_attribute("data-step") == (
        "validate")
    shoot(page, "slurm-1-rebooted-down")

    page.locator("#ticket-recovery button[data-step=validate]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    validation = newest(VALIDATE_ACTION)
    wait_for(lambda: Action.objects.get(pk=validation.pk).is_terminal, 120, "the validation")
    validation.refresh_from_db()
    assert validation.status == "succeeded", validation.last_error
    wait_for(lambda: synced(REBOOT_NODE) == "idle", 60, "the node back in service")

    page.reload()
    page.select_option("#to_status", "triaged")
    page.fill("#transition-note", "triaged")
    page.locator("#ticket-workflow form.fault-form button[type=submit]").click()
    page.wait_for_url(f"**/faults/{ticket.pk}/", timeout=15_000)
    page.select_option("#to_status", "resolved")
    # The evidence is the reboot through Slurm: a warm reboot, not typed.
    assert page.locator("#recovery_method").input_value() == RecoveryMethod.WARM_REBOOT
    shoot(page, "slurm-2-resolved-warm-reboot")


def synced(hostname: str) -> str:
    from jobs.sync import sync_node_states

    sync_node_states()
    return Node.objects.get(hostname=hostname).slurm_state
