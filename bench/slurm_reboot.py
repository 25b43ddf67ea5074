"""A 20-node reboot through Slurm and the BMCs, end to end, and the portal's extra cost over
calling `scontrol reboot` directly, against the real Slurm 22.05 test cluster.

    .venv/bin/python bench/slurm_reboot.py [--rounds 2]

Each round reboots all 20 nodes twice, alternating which path goes first:
- portal: jobs.services.request_reboot() -> one durable slurm.reboot Action (in-process, as the
  embedded default runs it) -> the CLI driver's `scontrol reboot ASAP nextstate=resume`;
- bare: `scontrol reboot ASAP nextstate=resume reason=... gpu[001-020]` from this process.
Either way slurmctld then runs the RebootProgram (manage.py slurm_reboot_program: a ForceOff and
an On power Action per node, through sushy-emulator), scripts/bmc/slurmd_power_harness.py
restarts each slurmd in a fresh time namespace when its BMC is On again, and the reboot is over
when `scontrol show node` shows every node IDLE with a boot time after the request.

`issue_ms` is the time from the request to Slurm having it (the call returned); `end_to_end_s`
until the last node is back. Prints one JSON document.

Needs root, MariaDB (scripts/slurm-up starts a 20-node cluster unless one is up; it must have
been started by a slurm-up that sets RebootProgram), sushy-tools (its own scripts/bmc-up in
/tmp/portal-bmc-bench on port 8650, 20 systems) and PostgreSQL at DATABASE_URL's server (the
database `portal_bench_reboot` is recreated). The bench's sushy-emulator stays up for the next
run (bmc-up is idempotent); stop it by the pids in /tmp/portal-bmc-bench/*.pid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from slurm_actions import database_url, recreate_database

ROOT = Path(__file__).resolve().parents[1]
NODES = [f"gpu{number:03d}" for number in range(1, 21)]
HOSTLIST = "gpu[001-020]"
BMC_DIR = Path("/tmp/portal-bmc-bench")
BMC_PORT = "8650"
SLURM_DIR = Path(os.environ.get("SLURM_TEST_DIR", "/tmp/portal-slurm"))
REBOOT_TIMEOUT_S = 150.0


def _slurm(*argv: str) -> str:
    environment = {**os.environ, "SLURM_CONF": str(SLURM_DIR / "slurm.conf")}
    return subprocess.run(
        argv, env=environment, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _wait_back(since: datetime) -> None:
    """Until every node is IDLE with a boot time at or after `since`."""
    started = time.monotonic()
    while time.monotonic() - started < REBOOT_TIMEOUT_S:
        back = 0
        for line in _slurm("scontrol", "show", "node", "-o", HOSTLIST).splitlines():
            fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
            # BootTime reads "None" while the node is down and has not registered since.
            booted = fields.get("BootTime", "None")
            back += (
                fields["State"] == "IDLE"
                and booted != "None"
                and datetime.fromisoformat(booted) >= since
            )
        if back == len(NODES):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the nodes were not back within {REBOOT_TIMEOUT_S:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()

    subprocess.run(
        [str(ROOT / "scripts/slurm-up")], env={**os.environ, "SLURM_TEST_NODES": "20"},
        check=True, capture_output=True, timeout=900,
    )  # fmt: skip
    if "reboot_from_controller" not in (SLURM_DIR / "slurm.conf").read_text():
        raise SystemExit("the running cluster has no RebootProgram: scripts/slurm-down first")
    bmc = json.loads(
        subprocess.run(
            [str(ROOT / "scripts/bmc-up")],
            env={**os.environ, "BMC_TEST_DIR": str(BMC_DIR), "BMC_TEST_PORT": BMC_PORT,
                 "BMC_TEST_NODES": str(len(NODES))},
            check=True, capture_output=True, text=True, timeout=300,
        ).stdout.strip().splitlines()[-1]
    )  # fmt: skip
    systems = json.loads(Path(bmc["systems_file"]).read_text())

    url = database_url("portal_bench_reboot")
    recreate_database(url)
    portal_env = {
        "DATABASE_URL": url,
        "BMC_DRIVER": "inventory.bmc.drivers.redfish.RedfishDriver",
        "BMC_CREDENTIALS_FILE": bmc["credentials_file"],
        "BMC_ENDPOINTS": json.dumps(dict.fromkeys(systems["systems"], systems["url"])),
        "BMC_POWER_DEADLINE_SECONDS": "30",
        "BMC_POLL_SECONDS": "0.25",
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": str(SLURM_DIR / "slurm.conf"),
    }
    os.environ.pop("REDIS_URL", None)  # in-process Actions: no worker in the measurement
    os.environ.update(portal_env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    # bench/ holds telemetry.py, analytics.py ...: the portal's apps must win those names.
    here = Path(__file__).resolve().parent
    sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != here]
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from inventory.models import Node
    from jobs.services import request_reboot

    nodes = [
        Node.objects.create(
            hostname=name,
            bmc_system_id=systems["systems"][name],
            bmc_credentials_ref=systems["credentials_ref"],
        )
        for name in NODES
    ]
    env_file = SLURM_DIR / "reboot-program.env"
    env_file.write_text(
        "".join(
            f"export {key}={shlex.quote(value)}\n"
            for key, value in {"PORTAL_ROOT": str(ROOT), "PATH": os.environ["PATH"],
                               **portal_env}.items()
        )
    )  # fmt: skip
    harness = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts/bmc/slurmd_power_harness.py"),
         "--bmc-dir", str(BMC_DIR), "--slurm-dir", str(SLURM_DIR), *NODES],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    samples: dict[str, list[dict]] = {"portal": [], "bare": []}
    with contextlib.suppress(subprocess.CalledProcessError):  # 22.05: 1 if none was drained
        _slurm("scontrol", "update", f"NodeName={HOSTLIST}", "State=RESUME")
    try:
        for round_number in range(arguments.rounds):
            order = ("portal", "bare") if round_number % 2 == 0 else ("bare", "portal")
            for path in order:
                since = datetime.now().replace(microsecond=0)
                started = time.monotonic()
                if path == "portal":
                    action, _ = request_reboot(
                        nodes=nodes, reason="bench: reboot", next_state="resume", via="bench"
                    )
                    action.refresh_from_db()
                    # The Action waits for the nodes to boot again (re-checked, not blocking).
                    assert action.status in ("queued", "succeeded"), action.last_error
                else:
                    _slurm("scontrol", "reboot", "ASAP", "nextstate=resume",
                           "reason=bench: reboot", HOSTLIST)  # fmt: skip
                issue_ms = (time.monotonic() - started) * 1000
                _wait_back(since)
                back_s = round(time.monotonic() - started, 2)
                sample = {"issue_ms": round(issue_ms, 1), "end_to_end_s": back_s}
                if path == "portal":
                    sample["action_succeeded_s"] = _action_done(action, started)
                samples[path].append(sample)
    finally:
        harness.terminate()
        harness.wait(timeout=10)
        env_file.unlink(missing_ok=True)

    def mean(path: str, key: str) -> float:
        return round(sum(sample[key] for sample in samples[path]) / len(samples[path]), 2)

    print(
        json.dumps(
            {
                "nodes": len(NODES),
                "samples": samples,
                "portal_end_to_end_s": mean("portal", "end_to_end_s"),
                "portal_action_succeeded_s": mean("portal", "action_succeeded_s"),
                "bare_scontrol_end_to_end_s": mean("bare", "end_to_end_s"),
                "portal_issue_ms": mean("portal", "issue_ms"),
                "bare_scontrol_issue_ms": mean("bare", "issue_ms"),
                "portal_extra_issue_ms": round(
                    mean("portal", "issue_ms") - mean("bare", "issue_ms"), 1
                ),
                "portal_extra_end_to_end_s": round(
                    mean("portal", "end_to_end_s") - mean("bare", "end_to_end_s"), 2
                ),
            },
            indent=2,
        )
    )
    return 0


def _action_done(action, started: float, deadline_s: float = 300.0) -> float:
    """Seconds from the request until the reboot Action succeeded: with no worker here, its
    re-checks are run in process as they fall due (SLURM_REBOOT_CHECK_SECONDS apart)."""
    from portal.services.actions import run_action

    while time.monotonic() - started < deadline_s:
        action.refresh_from_db()
        if action.status == "succeeded":
            return round(time.monotonic() - started, 2)
        assert action.status == "queued", (action.status, action.last_error)
        run_action(action_id=action.pk, worker="bench")
        time.sleep(0.5)
    raise AssertionError(f"the reboot Action had not succeeded after {deadline_s} s")


if __name__ == "__main__":
    sys.exit(main())
