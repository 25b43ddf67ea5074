"""The real single-host Slurm 22.05 test cluster, driven through scripts/slurm-up and slurm-down.

    info = ensure_slurm_cluster(nodes=16)   # starts it, or returns the running one
    subprocess.run(["sinfo", "--json"], env=slurm_env(info), ...)

Every Slurm command needs SLURM_CONF=<state_dir>/slurm.conf; slurm_env() adds it. The state
directory is ${SLURM_TEST_DIR:-/tmp/portal-slurm}. The scripts need root (see their headers).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SLURM_UP = REPO_ROOT / "scripts" / "slurm-up"
SLURM_DOWN = REPO_ROOT / "scripts" / "slurm-down"
DEFAULT_NODES = 100
# Cold start with package installation: ~1.5 min install plus ~0.5 min for 100 nodes.
SCRIPT_TIMEOUT = 900


class SlurmClusterError(RuntimeError):
    """A cluster script failed; the message carries the tail of its stderr (it tails logs)."""


def state_dir() -> Path:
    return Path(os.environ.get("SLURM_TEST_DIR", "/tmp/portal-slurm"))


def _run_script(argv: list[str], extra_env: dict[str, str] | None = None) -> str:
    env = {**os.environ, **(extra_env or {})}
    proc = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT, check=False
    )
    if proc.returncode != 0:
        raise SlurmClusterError(
            f"{' '.join(argv)} exited {proc.returncode}\n--- stderr (tail) ---\n"
            f"{proc.stderr[-6000:]}"
        )
    return proc.stdout


def _parse_info(stdout: str) -> dict:
    """slurm-up prints one line of JSON as its last line on stdout."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise SlurmClusterError("slurm-up printed nothing on stdout")
    return json.loads(lines[-1])


def ensure_slurm_cluster(nodes: int = DEFAULT_NODES) -> dict:
    """Start the cluster with `nodes` nodes unless it is already up, and describe it.

    A cluster that is already up is returned as it is, whatever its node count: read
    info["nodes"] rather than assuming `nodes`. Keys: state_dir, conf, nodes, cluster,
    partition, slurmrestd_url, and pids: {munged, slurmdbd, slurmctld, slurmrestd: pid,
    slurmd: {node name: pid}} (null for a daemon that is not running).
    """
    return _parse_info(_run_script([str(SLURM_UP)], {"SLURM_TEST_NODES": str(nodes)}))


def slurm_env(info: dict, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of os.environ (or `base`) with SLURM_CONF pointing at the test cluster."""
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = info["conf"]
    return env


def stop_controller() -> None:
    """Stop only slurmctld (state stays on disk); slurmds, slurmdbd and slurmrestd keep running."""
    _run_script([str(SLURM_DOWN), "--only-ctld"])


def start_controller() -> dict:
    """Start slurmctld again from its saved state (no-op if it runs); returns the cluster info."""
    return _parse_info(_run_script([str(SLURM_UP), "--only-ctld"]))


def stop_slurm_cluster() -> None:
    """Stop every daemon slurm-up started; logs and state stay in the state directory."""
    _run_script([str(SLURM_DOWN)])


def controller_running() -> bool:
    """Whether the slurmctld recorded in the state directory is alive (no Slurm RPC involved)."""
    try:
        pid = int((state_dir() / "run" / "slurmctld.pid").read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return False
    return comm == "slurmctld"


def slurmrestd_token(info: dict, username: str = "slurmrest", lifespan: int = 600) -> str:
    """A JWT for slurmrestd from `scontrol token` (needs root or SlurmUser)."""
    out = subprocess.run(
        ["scontrol", "token", f"username={username}", f"lifespan={lifespan}"],
        env=slurm_env(info),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for line in out.splitlines():
        if line.startswith("SLURM_JWT="):
            return line.split("=", 1)[1].strip()
    raise SlurmClusterError(f"no SLURM_JWT in scontrol token output: {out!r}")
