"""Slurm's RebootProgram: power-cycle the nodes slurmctld names, through their BMCs.

slurmctld (with SlurmctldParameters=reboot_from_controller) runs RebootProgram itself once a
node's `scontrol reboot` is due, with argv[1] = the hostlist, comma-separated
(hostlist_deranged_string: "gpu015,gpu016"), and, when the request named
features, argv[2] = those features (Slurm 22.05, src/slurmctld/agent.c, _reboot_from_ctld).
Just before, controller.c _queue_reboot_msg marks each node REBOOT_ISSUED, DOWN, with
boot_req_time = now; node_mgr.c validate_node_specs then waits for a registration whose boot
time (now - the uptime slurmd reports) is newer, and ping_nodes.c sets the node DOWN "reboot
timed out" after ResumeTimeout. So this program only has to take the hosts down and up again.

Each node gets two durable power Actions, ForceOff then On (a cold cycle): every BMC advertises
both, and an Off the BMC reports in between is what the test cluster's harness
(scripts/bmc/slurmd_power_harness.py) sees to restart that node's slurmd. They run here, in
this process, so the exit status tells slurmctld whether the BMCs did what was asked.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from inventory.bmc.power import request_power_action
from inventory.hostlist import expand_hostlist
from inventory.models import Node
from portal.errors import InvalidInput
from portal.services.actions import run_action

REASON = "Slurm RebootProgram: scontrol reboot issued"
# A cold cycle: the Off in between is visible to anything that follows the BMC's power state.
STEPS = ("force_off", "on")
# Each node waits on its BMC for seconds; in parallel, but not one thread per node of a rack.
MAX_PARALLEL = 16


def _cycle(node: Node) -> str | None:
    """Power-cycle one node; None when it worked, else what went wrong, in words."""
    try:
        for operation in STEPS:
            action, _ = request_power_action(
                node=node, operation=operation, reason=REASON, force=True, via="slurm"
            )
            run_action(action_id=action.pk, worker="slurm-reboot-program")
            _wait_until_finished(action)
            if action.status != "succeeded":
                return f"{node.hostname}: {operation} {action.status}: {action.last_error}"
        return None
    except Exception as error:  # reported to slurmctld's log per node: one bad BMC stops no other
        return f"{node.hostname}: {error}"
    finally:
        connection.close()  # each worker thread opened its own


def _wait_until_finished(action) -> None:
    """Where a worker runs (production; the Chromium story), the Action was also sent to it on
    commit, and whichever claims it first carries it out: run_action here then returns at once
    ("already running") with the Action still running. Wait for its end either way, bounded by
    what one attempt may take, so the exit status says what the BMC did."""
    from django.conf import settings

    deadline = time.monotonic() + settings.BMC_POWER_DEADLINE_SECONDS + 2 * settings.BMC_TIMEOUT
    action.refresh_from_db()
    while not action.is_terminal and time.monotonic() < deadline:
        time.sleep(0.5)
        action.refresh_from_db()


class Command(BaseCommand):
    help = "Slurm's RebootProgram: power-cycle the nodes of a hostlist through their BMCs."

    def add_arguments(self, parser):
        parser.add_argument("hostlist", help="Slurm hostlist, e.g. gpu[001-004]")
        parser.add_argument("features", nargs="?", default="", help="ignored: no reboot features")

    def handle(self, *args, hostlist: str, features: str, **options):
        try:
            names = expand_hostlist(hostlist)
        except InvalidInput as error:
            raise CommandError(f"bad hostlist {hostlist!r}: {error.detail}") from error
        nodes = list(Node.objects.filter(hostname__in=names).order_by("hostname"))
        unknown = sorted(set(names) - {node.hostname for node in nodes})
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, max(1, len(nodes)))) as pool:
            failures = [failure for failure in pool.map(_cycle, nodes) if failure]
        failures += [f"{name}: not in the inventory" for name in unknown]
        for failure in failures:
            self.stderr.write(failure)
        self.stdout.write(f"power-cycled {len(names) - len(failures)} of {len(names)}")
        if failures:
            # slurmctld logs "RebootProgram exit status of 1"; the nodes time out into DOWN.
            raise CommandError(f"{len(failures)} of {len(names)} nodes were not power-cycled")
