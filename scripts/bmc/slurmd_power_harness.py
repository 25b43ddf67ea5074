#!/usr/bin/env python3
"""Make the test cluster's slurmds follow their emulated BMCs' power, so a reboot is one.

In the test cluster every slurmd runs on this one host (scripts/slurm-up) and sushy-emulator
plays each node's BMC (scripts/bmc-up). This harness reads each named node's PowerState from the
emulator and, when the BMC reports Off, stops that node's slurmd; when it reports On again, it
starts the slurmd afresh in a new Linux time namespace whose CLOCK_BOOTTIME starts near zero
(`unshare --time --boottime -<uptime>`). slurmd reports its uptime from sysinfo(2), which reads
the namespace's boot time, and slurmctld takes boot_time = now - uptime (node_mgr.c
validate_node_specs, Slurm 22.05): the node looks freshly booted, which is what ends
REBOOT_ISSUED. Nothing else is faked: slurmctld decides from what slurmd really reports.

Only slurmds this harness stopped are started again, so it never fights slurm-up or a test
that stopped a slurmd on purpose.

    slurmd_power_harness.py --bmc-dir /tmp/portal-bmc-test --slurm-dir /tmp/portal-slurm \
        gpu013 gpu014 ...

It runs until terminated; each change it makes is one line on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests


def _slurmd_pid(slurm_dir: Path, node: str) -> int | None:
    try:
        pid = int((slurm_dir / "run" / f"slurmd-{node}.pid").read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if argv and argv[0].endswith(b"slurmd") and node.encode() in argv else None


def _stop(slurm_dir: Path, node: str, timeout: float = 15.0) -> None:
    pid = _slurmd_pid(slurm_dir, node)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _slurmd_pid(slurm_dir, node) == pid and time.monotonic() < deadline:
        time.sleep(0.05)
    if _slurmd_pid(slurm_dir, node) == pid:
        os.kill(pid, signal.SIGKILL)  # a host losing power does not wait for its daemons


def _start_booted(slurm_dir: Path, node: str) -> None:
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    # The new namespace's boot time is about one second ago: slurmd's uptime restarts.
    offset = -(int(uptime) - 1)
    environment = {**os.environ, "SLURM_CONF": str(slurm_dir / "slurm.conf")}
    with open(slurm_dir / "log" / "slurmd.start.log", "ab") as log:
        subprocess.run(
            ["unshare", "--time", "--boottime", str(offset), "slurmd", "-N", node],
            env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=True,
        )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bmc-dir", required=True, help="scripts/bmc-up's state directory")
    parser.add_argument("--slurm-dir", required=True, help="scripts/slurm-up's state directory")
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between reads")
    parser.add_argument("nodes", nargs="+")
    arguments = parser.parse_args()
    bmc_dir, slurm_dir = Path(arguments.bmc_dir), Path(arguments.slurm_dir)
    systems = json.loads((bmc_dir / "systems.json").read_text())
    login = json.loads((bmc_dir / "credentials.json").read_text())[systems["credentials_ref"]]
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # One follower per node: polled one after another, 20 BMCs busy with power changes answer
    # slowly enough to miss an Off that lasts only until the next On lands (1-11 s).
    followers = [
        threading.Thread(target=_follow, args=(node, systems, login, slurm_dir, arguments.interval))
        for node in arguments.nodes
    ]
    for follower in followers:
        follower.start()
    print(f"following {len(arguments.nodes)} BMCs", flush=True)
    for follower in followers:
        follower.join()
    return 0


def _follow(node: str, systems: dict, login: dict, slurm_dir: Path, interval: float) -> None:
    session = requests.Session()
    session.auth = (login["username"], login["password"])
    url = f"{systems['url']}/redfish/v1/Systems/{systems['systems'][node]}"
    stopped = False
    while True:
        try:
            power = session.get(url, timeout=5).json().get("PowerState")
        except (requests.RequestException, ValueError):
            power = None  # a BMC that does not answer changes nothing on the host
        if power == "Off" and not stopped:
            _stop(slurm_dir, node)
            stopped = True
            print(f"{node}: BMC Off, slurmd stopped", flush=True)
        elif power == "On" and stopped:
            _start_booted(slurm_dir, node)
            stopped = False
            print(f"{node}: BMC On, slurmd started in a fresh boot", flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
