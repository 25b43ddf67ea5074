"""Benchmark: poll every switch of the SAKURAONE fabric once, at scale 1 and scale 20; print JSON.

    DATABASE_URL=postgresql://... .venv/bin/python bench/fabric_poll.py [--driver emulated|ssh]
        [--scales 1,20] [--polls 3] [--concurrency N]

Scale N is N copies of the whole fabric (26 switches each: 16 leafs, 8 spines, 2 storage; 520
switches at scale 20), each imported into the inventory under its own names and polled through
`fabric.polling.poll_fabric`, i.e. through `get_fabric_driver` like the beat task:

- `--driver emulated` (default): in-process emulated switches (fabric.drivers.emulated);
- `--driver ssh`: the SONiC SSH driver against `python -m fabric.emulator` serving the same
  switches on this machine (one SSH port per switch). The driver's credentials store must
  resolve the switches' `credentials_ref` (sonic/leaf, sonic/spine, sonic/storage) to the
  emulator's admin login (password `--ssh-password`, exported as FABRIC_BENCH_SSH_PASSWORD).

Each poll reports `poller_cpu_seconds` (this process: SSH client, JSON parsing, storing) and,
with `--driver ssh`, `emulator_cpu_seconds` (the emulator process serving every switch); what
the wall time has beyond the two is waiting (round trips, PostgreSQL, and CPU other processes
took; `load_average_1m` says how busy the machine was). fabric/README.md has the figures.

The first poll of a scale has no previous sample (no rates); later polls compute rates and
write history, the steady state of the beat task. Runs in a scratch test database (created and
dropped here), never in the database DATABASE_URL names.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DRIVERS = {
    "emulated": "fabric.drivers.emulated.EmulatedDriver",
    "ssh": "fabric.drivers.ssh.SonicSshDriver",
}


def copy_spec(base: dict, number: int) -> dict:
    """Copy `number` of the SAKURAONE spec, with names and addresses of its own."""
    spec = copy.deepcopy(base)
    if number == 0:
        return spec
    tag = f"c{number:02d}"
    spec["name"] = f"{spec['name']}-{tag}"
    identifiers = spec.get("identifiers", {})
    for key in ("node_serial", "gpu_serial"):
        if identifiers.get(key):
            identifiers[key] = f"{tag.upper()}{identifiers[key]}"
    if identifiers.get("mac_oui"):  # NIC MACs are unique: a locally administered OUI per copy
        identifiers["mac_oui"] = f"02:{number:02x}:00"
    for pod in spec["pods"]:
        pod["name"] = f"{tag}{pod['name']}"
        for nodes in pod["nodes"]:
            nodes["range"] = f"{tag}{nodes['range']}"
    for group in spec["switch_groups"]:
        group["hostname"] = f"{tag}-{group['hostname']}"
        if group.get("management_address"):
            first, _second, *rest = group["management_address"].split(".")
            group["management_address"] = ".".join([first, str(100 + number), *rest])
    for link in spec["wiring"]["node_links"]:
        link["switch"] = f"{tag}-{link['switch']}"
    return spec


def wipe() -> None:
    from django.db import connection

    from fabric.models import (
        LldpFinding,
        LldpObservation,
        PortCounterHistory,
        PortCounterLatest,
        SwitchPollState,
    )
    from inventory.models import (
        GPU,
        NIC,
        Allocation,
        Cable,
        Node,
        Pod,
        Rack,
        Switch,
        SwitchPort,
        TopologyImportRun,
    )

    models = [PortCounterHistory, PortCounterLatest, SwitchPollState, LldpObservation,
              LldpFinding, Cable, Allocation, NIC, GPU, SwitchPort, Switch, Node, Rack, Pod,
              TopologyImportRun]
    tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in models)
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {tables} CASCADE")


def start_ssh_emulator(workdir: Path, password: str) -> tuple[subprocess.Popen, dict[str, int]]:
    from fabric.drivers.emulated import specs_from_inventory

    spec_file = workdir / "fabric.json"
    spec_file.write_text(json.dumps({"switches": [s.to_dict() for s in specs_from_inventory()]}))
    process = subprocess.Popen(
        [sys.executable, "-m", "fabric.emulator", "--spec", str(spec_file),
         "--keys", str(workdir / "keys"), "--base-port", "0", "--password", password],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    line = process.stdout.readline()
    if not line:
        raise RuntimeError("the emulator exited before listening")
    return process, json.loads(line)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of another process (utime + stime of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_scale(scale: int, args, base_spec: dict) -> dict:
    from django.conf import settings

    from fabric import polling
    from fabric.drivers.base import SwitchTarget
    from fabric.drivers.emulated import build_emulated_fabric, reset_emulated_fabric
    from inventory.models import Switch, SwitchPort
    from inventory.topology.importer import import_topology

    wipe()
    reset_emulated_fabric()
    started = time.perf_counter()
    for number in range(scale):
        import_topology(copy_spec(base_spec, number))
    import_seconds = time.perf_counter() - started
    result: dict = {
        "scale": scale,
        "switches": Switch.objects.count(),
        "interfaces": SwitchPort.objects.filter(breakout_mode="").count(),
        "cages_64_per_switch": Switch.objects.count() * 64,
        "inventory_import_seconds": round(import_seconds, 2),
    }
    emulator = None
    original_target = polling.poll_target
    try:
        started = time.perf_counter()
        if args.driver == "emulated":
            build_emulated_fabric()
        else:
            workdir = Path(tempfile.mkdtemp(prefix="fabric-bench-"))
            emulator, ports = start_ssh_emulator(workdir, args.ssh_password)
            # The SSH driver's own credentials store and host-key check, pointed at the lab.
            references = set(Switch.objects.values_list("credentials_ref", flat=True))
            credentials = workdir / "credentials.json"
            credentials.write_text(json.dumps({
                ref: {"username": "admin", "password": args.ssh_password} for ref in references
            }))
            settings.FABRIC_CREDENTIALS_FILE = str(credentials)
            settings.FABRIC_KNOWN_HOSTS_FILE = str(workdir / "known_hosts")

            def local_target(switch):
                return SwitchTarget(hostname=switch.hostname, address="127.0.0.1",
                                    port=ports[switch.hostname],
                                    credentials_ref=switch.credentials_ref,
                                    trust_on_first_use=True)

            polling.poll_target = local_target
        result["emulator_boot_seconds"] = round(time.perf_counter() - started, 2)
        polls = []
        for _ in range(args.polls):
            # Where a poll's time goes: the poller's own CPU (this process: SSH client, JSON
            # parsing, storing), the emulator's CPU (serving every switch), the rest waiting.
            poller_cpu = time.process_time()
            emulator_cpu = process_cpu_seconds(emulator.pid) if emulator else 0.0
            poll = polling.poll_fabric(concurrency=args.concurrency)
            polls.append({
                "seconds": round(poll.seconds, 3),
                "read_seconds": round(poll.read_seconds, 3),
                "store_seconds": round(poll.seconds - poll.read_seconds, 3),
                "poller_cpu_seconds": round(time.process_time() - poller_cpu, 3),
                "emulator_cpu_seconds": round(
                    process_cpu_seconds(emulator.pid) - emulator_cpu if emulator else 0.0, 3),
                "ports_stored": poll.ports,
                "failed": len(poll.failed),
                # The machine is shared: a figure means little without what else ran.
                "load_average_1m": round(os.getloadavg()[0], 2),
            })
            time.sleep(args.interval)
        steady = [p["seconds"] for p in polls[1:]] or [polls[0]["seconds"]]
        result.update(
            first_poll_seconds=polls[0]["seconds"],
            steady_poll_seconds=round(statistics.median(steady), 3),
            ports_per_second=round(polls[-1]["ports_stored"] / max(polls[-1]["seconds"], 1e-9)),
            polls=polls,
        )
    finally:
        polling.poll_target = original_target
        if emulator is not None:
            emulator.terminate()
            emulator.wait(timeout=30)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--driver", choices=sorted(DRIVERS), default="emulated")
    parser.add_argument("--scales", default="1,20", help="comma-separated copies of the fabric")
    parser.add_argument("--polls", type=int, default=3, help="polls per scale (first has no rates)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="switches read at once (default: FABRIC_POLL_CONCURRENCY)")
    parser.add_argument("--ssh-password", default="admin")
    parser.add_argument("--keepdb", action="store_true", help="keep the scratch database")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import setup_databases, teardown_databases

    from inventory.topology.spec import spec_from_yaml

    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (a scratch database is made there)")
    settings.FABRIC_DRIVER = DRIVERS[args.driver]
    # Nobody listens during a benchmark; keep the "fabric" events in process.
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    base_spec = spec_from_yaml((ROOT / "inventory/fixtures/sakuraone.yaml").read_text())
    scales = [int(value) for value in args.scales.split(",") if value.strip()]

    database = settings.DATABASES["default"]
    database.setdefault("TEST", {})["NAME"] = f"{database['NAME']}_fabric_bench"
    old_config = setup_databases(verbosity=0, interactive=False, keepdb=args.keepdb)
    try:
        results = [run_scale(scale, args, base_spec) for scale in scales]
    finally:
        teardown_databases(old_config, verbosity=0, keepdb=args.keepdb)
    print(json.dumps({
        "benchmark": "fabric_poll",
        "driver": args.driver,
        "concurrency": args.concurrency or settings.FABRIC_POLL_CONCURRENCY,
        "cpus": os.cpu_count(),
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
