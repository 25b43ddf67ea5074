"""`scontrol reboot` end to end against the real Slurm 22.05 of the tests: slurmctld runs the
portal's RebootProgram (manage.py slurm_reboot_program), which power-cycles the nodes through
sushy-emulator as their BMCs; scripts/bmc/slurmd_power_harness.py restarts each node's slurmd in
a fresh time namespace when its BMC comes back On, and slurmctld, seeing a boot time newer than
the request, ends the reboot and resumes the node.

Needs root, MariaDB and sushy-tools (scripts/slurm-up, scripts/bmc-up).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection

from inventory.bmc.power import POWER_ACTION
from jobs.services import REBOOT_ACTION, request_reboot
from portal.models import Action, ActionStatus
from portal.services.actions import run_action
from tests.jobs import slurm_cluster

# real_slurm; sushy_emulator and redfish_settings
pytest_plugins = ["tests.jobs.slurm_fixtures", "tests.inventory.bmc_fixtures"]
pytestmark = pytest.mark.slurm

# Nodes of both the 20-node cluster and the 16-system emulator, used by no other Slurm test.
REBOOT_NODES = ("gpu015", "gpu016")
# ResumeTimeout (60 s in slurm-up) plus the BMC's 1-11 s per power change, twice.
REBOOT_DEADLINE = 90.0


def _database_url() -> str:
    """The test database this process uses, for the RebootProgram that slurmctld starts."""
    s = connection.settings_dict
    return f"postgresql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def _node(real_slurm, name: str) -> dict:
    """`scontrol show node` as a dict (its State carries the +FLAGS, BootTime its boot)."""
    out = real_slurm.run("scontrol", "show", "node", "-o", name).stdout
    return dict(word.split("=", 1) for word in out.split() if "=" in word)


@pytest.fixture
def reboot_through_bmc(real_slurm, sushy_emulator, redfish_settings, transactional_db):
    """The cluster's RebootProgram pointed at this test's portal, the nodes' BMCs On, and the
    harness following them. Yields the inventory nodes."""
    conf = Path(real_slurm.conf).read_text()
    if "reboot_from_controller" not in conf:
        pytest.fail("the running test cluster has no RebootProgram: scripts/slurm-down, rerun")
    from inventory.bmc.drivers.base import get_bmc_driver
    from inventory.bmc.targets import bmc_target
    from jobs.drivers.base import reset_slurm_driver
    from tests.inventory.bmc_fixtures import BMC_TEST_DIR, ROOT, emulated_node

    redfish_settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    redfish_settings.SLURM_CONF = real_slurm.conf
    reset_slurm_driver()

    nodes = [emulated_node(sushy_emulator, name) for name in REBOOT_NODES]
    driver = get_bmc_driver()
    for node in nodes:
        if driver.power_state(bmc_target(node)) != "On":
            driver.reset(bmc_target(node), "On")
    slurm_dir = slurm_cluster.state_dir()
    settings_env = {
        "PORTAL_ROOT": str(ROOT),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DATABASE_URL": _database_url(),
        "REDIS_URL": os.environ.get("REDIS_URL", ""),
        "BMC_DRIVER": redfish_settings.BMC_DRIVER,
        "BMC_CREDENTIALS_FILE": redfish_settings.BMC_CREDENTIALS_FILE,
        "BMC_ENDPOINTS": json.dumps(redfish_settings.BMC_ENDPOINTS),
        "BMC_POWER_DEADLINE_SECONDS": "30",
        "BMC_POLL_SECONDS": "0.25",
    }
    env_file = slurm_dir / "reboot-program.env"
    env_file.write_text(
        "".join(f"export {key}={shlex.quote(value)}\n" for key, value in settings_env.items())
    )
    harness = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts/bmc/slurmd_power_harness.py"),
         "--bmc-dir", BMC_TEST_DIR, "--slurm-dir", str(slurm_dir), *REBOOT_NODES],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert "following" in harness.stdout.readline()
    try:
        yield nodes
    finally:
        harness.send_signal(signal.SIGTERM)
        harness.wait(timeout=10)
        env_file.unlink(missing_ok=True)
        reset_slurm_driver()
        # Whatever happened, leave the nodes' slurmds running and the nodes usable.
        slurm_cluster.ensure_slurm_cluster(nodes=slurm_cluster.TEST_NODES)
        real_slurm.run("scontrol", "reboot", "cancel", ",".join(REBOOT_NODES), check=False)
        real_slurm.restore_nodes(REBOOT_NODES)
        for name in REBOOT_NODES:
            if "DOWN" in _node(real_slurm, name).get("State", ""):
                real_slurm.run(
                    "scontrol", "update", f"NodeName={name}", "State=RESUME", check=False
                )


def run_until_finished(action: Action, deadline_seconds: float) -> tuple[Action, set[str]]:
    """Run the Action as the worker would, each time its wait is over (here: at once, every
    half second), until it ends; returns it and every state its progress named meanwhile."""
    seen: set[str] = set()
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        Action.objects.filter(pk=action.pk).update(not_before=None)
        run_action(action_id=action.pk)
        action.refresh_from_db()
        if action.status != ActionStatus.QUEUED:
            return action, seen
        seen.update((action.result or {}).get("waiting", {}).values())
        time.sleep(0.5)
    return action, seen


def test_scontrol_reboot_power_cycles_through_the_bmc_and_the_node_comes_back(
    real_slurm, reboot_through_bmc
):
    boot_before = {name: _node(real_slurm, name)["BootTime"] for name in REBOOT_NODES}
    requested_at = datetime.now().replace(microsecond=0)
    action, _ = request_reboot(
        nodes=reboot_through_bmc, reason="FT-1: XID 79, reboot", next_state="resume"
    )
    # The Action is the whole reboot: it waits (no worker blocked) while Slurm reboots the
    # nodes, and succeeds only once each has registered with a new boot time.
    action, seen = run_until_finished(action, REBOOT_DEADLINE)
    assert action.status == ActionStatus.SUCCEEDED, (action.last_error, seen)
    assert action.kind == REBOOT_ACTION
    # slurmctld marked it issued before running the RebootProgram (controller.c), and the
    # portal showed it rebooting (not down) meanwhile.
    assert "reboot issued (rebooting)" in seen, seen
    for name in REBOOT_NODES:
        node = _node(real_slurm, name)
        assert node["State"] == "IDLE", node
        assert node["BootTime"] != boot_before[name]
        assert datetime.fromisoformat(node["BootTime"]) >= requested_at
        assert action.result["boot_times"][name].startswith(node["BootTime"])

    # The power went through the portal: ForceOff then On per node, durable and succeeded.
    # The RebootProgram's process records its "on" after its next BMC poll, which may come
    # after slurmd is back and the reboot Action saw it: wait for those records, boundedly.
    power = Action.objects.filter(kind=POWER_ACTION, target__in=REBOOT_NODES)
    deadline = time.monotonic() + 30
    while power.filter(status=ActionStatus.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.25)
    assert sorted((a.target, a.parameters["operation"], a.status) for a in power) == sorted(
        (name, operation, "succeeded") for name in REBOOT_NODES for operation in ("force_off", "on")
    )


# A node of this engineer's share of the cluster that no harness follows: its "BMC" never
# brings it back (the test stops its slurmd, as a host that stays dark would).
DARK_NODE = "gpu063"


@pytest.fixture
def dark_node(real_slurm, settings, transactional_db):
    from inventory.models import Node
    from jobs.drivers.base import reset_slurm_driver

    settings.SLURM_DRIVER = "jobs.drivers.cli.ScontrolDriver"
    settings.SLURM_CONF = real_slurm.conf
    reset_slurm_driver()
    yield Node.objects.create(hostname=DARK_NODE)
    reset_slurm_driver()
    real_slurm.run("scontrol", "cancel_reboot", DARK_NODE, check=False)
    pid_file = slurm_cluster.state_dir() / "run" / f"slurmd-{DARK_NODE}.pid"
    if not _slurmd_running(pid_file):
        subprocess.run(["slurmd", "-N", DARK_NODE], env=real_slurm.env, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while "DOWN" in _node(real_slurm, DARK_NODE)["State"] and time.monotonic() < deadline:
        real_slurm.run("scontrol", "update", f"NodeName={DARK_NODE}", "State=RESUME", check=False)
        time.sleep(1)
    real_slurm.restore_nodes([DARK_NODE])


def _slurmd_running(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def test_a_node_that_never_comes_back_fails_the_reboot_with_slurms_reason(real_slurm, dark_node):
    action, _ = request_reboot(nodes=[dark_node], reason="FT-2: XID 79, reboot")
    action, _seen = run_until_finished(action, 5)
    assert action.status == ActionStatus.QUEUED  # issued: the RebootProgram runs
    assert "REBOOT_ISSUED" in _node(real_slurm, DARK_NODE)["State"]
    pid = _slurmd_running(slurm_cluster.state_dir() / "run" / f"slurmd-{DARK_NODE}.pid")
    assert pid, "the dark node's slurmd was not running to begin with"
    os.kill(pid, signal.SIGKILL)  # the power went off and never came on again

    # ResumeTimeout (60 s) after the RebootProgram ran, slurmctld gives up on it.
    action, seen = run_until_finished(action, REBOOT_DEADLINE)
    assert action.status == ActionStatus.FAILED, (action.status, seen)
    # Slurm's own words, the request's reason verbatim (no quotes added on the way) followed by
    # what slurmctld appended: issued, then timed out.
    assert (
        f"{DARK_NODE}: FT-2: XID 79, reboot : reboot issued : reboot timed out (Slurm: down)"
        in action.last_error
    )
    assert seen == {"reboot issued (rebooting)"}, seen
